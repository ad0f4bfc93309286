/**
 * The closed message vocabulary of the executor scaffolding, one tagged union per link (PROTOCOL.md has the
 * sequence diagrams and the rules):
 *   - router → engine (ZeroMQ PUSH/PULL over ipc://): `enqueue`, `cancel`
 *   - engine → router: `ready`, `response`, `stream`
 *   - engine → worker (shared-memory ring): `job`, `stop`
 *   - worker → engine (shared-memory ring): `ready`, `done`, `failed`, `stream`, `fatal`
 * Every message is a `Packet`: a small JSON header plus binary blobs (tensor bytes), referenced from the
 * header by index. Headers are validated with zod where they enter a process or thread.
 */
import { z } from 'zod';
import { ExecutorErrorCode, executorError, type WireError } from './executor-errors.js';

// ---------- tensors ----------

export const DTYPES = ['float32', 'int64', 'int32', 'uint8'] as const;
export type DType = (typeof DTYPES)[number];
export type TypedArray = Float32Array | BigInt64Array | Int32Array | Uint8Array;
export interface Tensor { dtype: DType; shape: number[]; data: TypedArray }
export type Tensors = Record<string, Tensor>;

const CTOR = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array } as const;
const BYTES: Record<DType, number> = { float32: 4, int64: 8, int32: 4, uint8: 1 };

/** A tensor in a header: dtype, shape and the index of the blob that holds its bytes. */
const TensorRef = z.object({ dtype: z.enum(DTYPES), shape: z.array(z.number().int().nonnegative()), blob: z.number().int().nonnegative() });
export type TensorRef = z.infer<typeof TensorRef>;

export function tensor(dtype: DType, shape: number[], data: TypedArray): Tensor {
  const numel = shape.reduce((a, b) => a * b, 1);
  if (!(data instanceof CTOR[dtype]) || data.length !== numel) {
    throw executorError(ExecutorErrorCode.PROTOCOL, `tensor [${shape}] ${dtype} does not match its data (${data.constructor.name} of ${data.length})`);
  }
  return { dtype, shape, data };
}

/** Appends the tensors' bytes to `blobs` (views, no copy) and returns their references. */
export function refTensors(tensors: Tensors | undefined, blobs: Uint8Array[]): Record<string, TensorRef> {
  const out: Record<string, TensorRef> = {};
  for (const [name, t] of Object.entries(tensors ?? {})) {
    out[name] = { dtype: t.dtype, shape: t.shape, blob: blobs.length };
    blobs.push(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return out;
}

/** Rebuilds tensors from references; views when the blob is aligned for the dtype, else a copy. */
export function derefTensors(refs: Record<string, TensorRef> | undefined, blobs: readonly Uint8Array[]): Tensors {
  const out: Tensors = {};
  for (const [name, r] of Object.entries(refs ?? {})) {
    const blob = blobs[r.blob];
    const numel = r.shape.reduce((a, b) => a * b, 1);
    if (!blob || blob.byteLength !== numel * BYTES[r.dtype]) {
      throw executorError(ExecutorErrorCode.PROTOCOL, `tensor '${name}' [${r.shape}] ${r.dtype} needs ${numel * BYTES[r.dtype]} bytes, blob ${r.blob} has ${blob?.byteLength}`);
    }
    const aligned = blob.byteOffset % BYTES[r.dtype] === 0 ? blob : blob.slice();
    out[name] = { dtype: r.dtype, shape: r.shape, data: new CTOR[r.dtype](aligned.buffer as ArrayBuffer, aligned.byteOffset, numel) };
  }
  return out;
}

// ---------- items ----------

/** One unit of work inside a request (one image, one audio clip, ...): executor-specific meta + tensors. */
export interface Item<M = Record<string, unknown>> { id: string; meta: M; tensors: Tensors }

const Meta = z.record(z.string(), z.unknown());
const ItemHeader = z.object({ id: z.string(), meta: Meta, tensors: z.record(z.string(), TensorRef) });
export type ItemHeader = z.infer<typeof ItemHeader>;

export const WireErrorSchema = z.object({ code: z.string(), message: z.string(), status: z.number().int(), details: z.unknown().optional() });

/** The outcome of one item: ok with optional meta/tensors (e.g. shapes, a generated image), or an error. */
export interface ItemResult { id: string; ok: boolean; error?: WireError; meta?: Record<string, unknown>; tensors?: Tensors }
const ItemResultHeader = z.object({
  id: z.string(), ok: z.boolean(), error: WireErrorSchema.optional(), meta: Meta.optional(), tensors: z.record(z.string(), TensorRef).optional(),
});
export type ItemResultHeader = z.infer<typeof ItemResultHeader>;

export function itemsToWire(items: readonly Item[], blobs: Uint8Array[]): ItemHeader[] {
  return items.map((it) => ({ id: it.id, meta: it.meta as Record<string, unknown>, tensors: refTensors(it.tensors, blobs) }));
}
export function itemsFromWire(headers: readonly ItemHeader[], blobs: readonly Uint8Array[]): Item[] {
  return headers.map((h) => ({ id: h.id, meta: h.meta, tensors: derefTensors(h.tensors, blobs) }));
}
export function resultsToWire(results: readonly ItemResult[], blobs: Uint8Array[]): ItemResultHeader[] {
  return results.map(({ tensors, ...r }) => (tensors ? { ...r, tensors: refTensors(tensors, blobs) } : r));
}
export function resultsFromWire(headers: readonly ItemResultHeader[], blobs: readonly Uint8Array[]): ItemResult[] {
  return headers.map(({ tensors, ...r }) => (tensors ? { ...r, tensors: derefTensors(tensors, blobs) } : r));
}

// ---------- router ↔ engine ----------

export const EngineInbound = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('enqueue'), requestId: z.string(), deadline: z.number(), traceparent: z.string().optional(), items: z.array(ItemHeader).min(1),
  }),
  z.object({ type: z.literal('cancel'), requestId: z.string(), reason: z.string() }),
  /** The router's heartbeat: the engine answers `pong` with the same seq (EngineServer does, not the engine loop). */
  z.object({ type: z.literal('ping'), seq: z.number().int().nonnegative() }),
]);
export type EngineInbound = z.infer<typeof EngineInbound>;
/** The messages an engine loop handles: all but the heartbeat, which the link answers itself. */
export type EngineWork = Exclude<EngineInbound, { type: 'ping' }>;

export const EngineOutbound = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), info: Meta }),
  z.object({
    type: z.literal('response'), requestId: z.string(), ok: z.boolean(), error: WireErrorSchema.optional(), items: z.array(ItemResultHeader),
  }),
  z.object({
    type: z.literal('stream'), requestId: z.string(), itemId: z.string(), seq: z.number().int().nonnegative(), meta: Meta.optional(),
    tensors: z.record(z.string(), TensorRef).optional(),
  }),
  z.object({ type: z.literal('pong'), seq: z.number().int().nonnegative() }),
]);
export type EngineOutbound = z.infer<typeof EngineOutbound>;

// ---------- engine ↔ worker ----------

export const WorkerInbound = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('job'), jobId: z.number().int(), meta: Meta, items: z.array(ItemHeader),
    /** Set on the first job after a failed tensor-parallel job: the all-reduce state was reset. */
    resetReduce: z.boolean().optional(),
  }),
  z.object({ type: z.literal('stop') }),
]);
export type WorkerInbound = z.infer<typeof WorkerInbound>;

export const WorkerOutbound = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), rank: z.number().int(), info: Meta.optional() }),
  z.object({ type: z.literal('done'), jobId: z.number().int(), items: z.array(ItemResultHeader) }),
  z.object({ type: z.literal('failed'), jobId: z.number().int(), error: WireErrorSchema }),
  z.object({
    type: z.literal('stream'), jobId: z.number().int(), itemId: z.string(), seq: z.number().int().nonnegative(), meta: Meta.optional(),
    tensors: z.record(z.string(), TensorRef).optional(),
  }),
  z.object({ type: z.literal('fatal'), error: WireErrorSchema }),
]);
export type WorkerOutbound = z.infer<typeof WorkerOutbound>;

// ---------- packets ----------

/** A message as it travels: header + binary blobs. */
export interface Packet<H> { header: H; blobs: Uint8Array[] }

/** One handler per message type: adding a type to a union forces every link end to handle it. */
export type Handlers<M extends { type: string }> = { [K in M['type']]: (msg: Extract<M, { type: K }>, blobs: Uint8Array[]) => unknown };

/** Validates a header; a mismatch is a PROTOCOL error naming the field. */
export function parseHeader<T>(schema: z.ZodType<T>, raw: unknown, link: string): T {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw executorError(ExecutorErrorCode.PROTOCOL, `${link}: ${i.path.join('.') || 'message'}: ${i.message}`);
  }
  return r.data;
}

/** Calls the handler of the message's type and returns what it returns (a promise for async handlers). */
export function dispatch<M extends { type: string }>(handlers: Handlers<M>, msg: M, blobs: Uint8Array[]): unknown {
  return (handlers[msg.type as M['type']] as (m: M, b: Uint8Array[]) => unknown)(msg, blobs);
}

/** ZeroMQ frames: [JSON header, ...blobs]. */
export function toFrames(p: Packet<unknown>): Uint8Array[] {
  return [Buffer.from(JSON.stringify(p.header)), ...p.blobs];
}

export function fromFrames<T>(frames: readonly Uint8Array[], schema: z.ZodType<T>, link: string): Packet<T> {
  if (frames.length === 0) throw executorError(ExecutorErrorCode.PROTOCOL, `${link}: empty message`);
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(frames[0]!.buffer, frames[0]!.byteOffset, frames[0]!.byteLength).toString('utf8'));
  } catch (e) {
    throw executorError(ExecutorErrorCode.PROTOCOL, `${link}: header is not JSON (${(e as Error).message})`);
  }
  return { header: parseHeader(schema, raw, link), blobs: frames.slice(1) as Uint8Array[] };
}
