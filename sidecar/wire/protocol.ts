/**
 * Messages on the two sidecar links, validated with zod where they enter a process.
 *
 * Client ↔ local sidecar (unix socket): every request carries `rid`; the sidecar answers each with
 * `{rid, ok: true, ...}` or `{rid, ok: false, error}`; `cancel` has no answer (it ends a waiting request).
 * Sidecar → sidecar (TCP): the dialing sidecar says `hello`; then the other one sends `chunk` (with its bytes as
 * the payload), `close` and `fail` on that link (one-way).
 * Requests and peer messages may carry the caller's W3C `traceparent`: the sidecars' spans join the caller's trace.
 */
import { z } from 'zod';
import type { DType } from '../tensor.js';
import type { WireError } from '../errors.js';

const rank = z.number().int().min(0);
const dtype = z.enum(['f32', 'f16', 'bf16', 'f64', 'i64', 'i32', 'u8', 'bool']);
const id = z.string().min(1).max(256);
const chunkNo = z.number().int().min(0);
const groups = z.array(z.array(rank).min(1)).min(1);
const traceparent = z.string().max(128).optional();

/**
 * The client↔sidecar protocol version, said in both hellos. 2: a recv reply may carry the chunk's bytes as its payload
 * (`inline: true`, see INLINE_MAX_BYTES) instead of an offset in shared memory. A sidecar answers a client that says
 * no version (1) with offsets only, so an older executor keeps working against a newer sidecar and the other way round.
 * Sidecar↔sidecar frames did not change (a receiving sidecar decides alone where a chunk's bytes go).
 */
export const WIRE_VERSION = 3;
/**
 * 3: a `done` may say `quiet: true`: the sidecar answers it only when it fails (an error reply the client logs), so a
 * markDone costs the client no round trip and the sidecar no reply; the consumer's next recv leaves in the same write.
 * A client sends it only to a sidecar whose hello said 3 or more.
 */
export const QUIET_DONE_VERSION = 3;
/**
 * Objects up to this size take the one-frame fast path: the bytes travel inside the put, the sidecar keeps them in its
 * heap (no shared-memory slot to allocate and free) and hands them back inside the recv reply.
 */
export const INLINE_MAX_BYTES = 64 * 1024;

export const kinds = ['tensor', 'json', 'bytes'] as const;
export type ChunkKind = (typeof kinds)[number];

export const HelloReq = z.object({
  op: z.literal('hello'), rid: z.number(), rank, group: z.array(rank).min(1), hint: z.number().int().positive().optional(),
  wire: z.number().int().min(1).optional(), // WIRE_VERSION of the client; absent = 1
});
export const AllocReq = z.object({ op: z.literal('alloc'), rid: z.number(), size: z.number().int().min(0), deadline: z.number(), traceparent });
export const PutReq = z.object({
  op: z.literal('put'), rid: z.number(), id, chunk: chunkNo,
  numChunks: z.number().int().min(1).optional(), stream: z.boolean().optional(),
  dst: groups, kind: z.enum(kinds), dtype: dtype.optional(), shape: z.array(z.number().int().min(0)).optional(),
  size: z.number().int().min(0), alloc: z.number().int().optional(), ttlMs: z.number().positive().optional(), deadline: z.number(),
  lease: z.boolean().optional(), traceparent,
});
export const RecvReq = z.object({ op: z.literal('recv'), rid: z.number(), id, chunk: chunkNo, deadline: z.number(), traceparent });
export const DoneReq = z.object({ op: z.literal('done'), rid: z.number(), id, chunk: chunkNo, group: z.boolean().optional(), quiet: z.boolean().optional(), traceparent });
export const CloseReq = z.object({ op: z.literal('close'), rid: z.number(), id, numChunks: z.number().int().min(0), dst: groups.optional(), traceparent });
export const FailReq = z.object({ op: z.literal('fail'), rid: z.number(), id, reason: z.string(), dst: groups.optional(), traceparent });
export const CancelReq = z.object({ op: z.literal('cancel'), rid: z.number() });

export const ClientRequest = z.discriminatedUnion('op', [HelloReq, AllocReq, PutReq, RecvReq, DoneReq, CloseReq, FailReq, CancelReq]);
export type ClientRequest = z.infer<typeof ClientRequest>;
export type PutReq = z.infer<typeof PutReq>;

// ---------- the hot requests, checked without zod ----------
// A sidecar serves a put, a recv and (for slot chunks) a done per transfer: zod's parse (a walk of the schema and a
// copy of the object) was a measurable part of the sidecar's CPU per 4 KiB transfer. These checks accept exactly what
// the schemas above accept for those ops (test/unit/sidecar/protocol-check.test.ts compares them on valid and invalid
// requests); a request they do not accept goes to zod, which rejects it with its usual message (SIDECAR_BAD_REQUEST)
// or accepts it. Unknown keys are left in place rather than stripped: the server reads only the fields it knows.

const isInt = (x: unknown, min: number): x is number => Number.isSafeInteger(x) && (x as number) >= min;
const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const isId = (x: unknown): x is string => typeof x === 'string' && x.length >= 1 && x.length <= 256;
const optBool = (x: unknown) => x === undefined || typeof x === 'boolean';
const optTraceparent = (x: unknown) => x === undefined || (typeof x === 'string' && x.length <= 128);
const DTYPES: ReadonlySet<unknown> = new Set(dtype.options);
const KINDS: ReadonlySet<unknown> = new Set(kinds);
function isRanks(x: unknown): boolean {
  if (!Array.isArray(x) || x.length === 0) return false;
  for (const r of x) if (!isInt(r, 0)) return false;
  return true;
}
function isGroups(x: unknown): boolean {
  if (!Array.isArray(x) || x.length === 0) return false;
  for (const g of x) if (!isRanks(g)) return false;
  return true;
}
function isShape(x: unknown): boolean {
  if (!Array.isArray(x)) return false;
  for (const d of x) if (!isInt(d, 0)) return false;
  return true;
}

/** The fields a put and a peer's chunk share: which chunk of which id, for whom, what it holds. */
function isChunkDescriptor(m: Record<string, unknown>): boolean {
  return isId(m.id) && isInt(m.chunk, 0) && (m.numChunks === undefined || isInt(m.numChunks, 1)) && optBool(m.stream)
    && isGroups(m.dst) && KINDS.has(m.kind) && (m.dtype === undefined || DTYPES.has(m.dtype)) && (m.shape === undefined || isShape(m.shape))
    && isInt(m.size, 0) && optTraceparent(m.traceparent);
}

/** Whether `m` (a JSON-parsed request) is a valid put, recv, done or cancel; false sends it to zod. */
function hotRequest(m: Record<string, unknown>): boolean {
  if (!isNum(m.rid)) return false;
  switch (m.op) {
    case 'recv': return isId(m.id) && isInt(m.chunk, 0) && isNum(m.deadline) && optTraceparent(m.traceparent);
    case 'done': return isId(m.id) && isInt(m.chunk, 0) && optBool(m.group) && optBool(m.quiet) && optTraceparent(m.traceparent);
    case 'cancel': return true;
    case 'put': return isChunkDescriptor(m) && (m.alloc === undefined || isInt(m.alloc, Number.MIN_SAFE_INTEGER))
      && (m.ttlMs === undefined || (isNum(m.ttlMs) && m.ttlMs > 0)) && isNum(m.deadline) && optBool(m.lease);
    default: return false;
  }
}

/** `ClientRequest.safeParse`, with the hot ops checked by hand first (see above). */
export function parseClientRequest(raw: unknown): ReturnType<typeof ClientRequest.safeParse> {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw) && hotRequest(raw as Record<string, unknown>)) {
    return { success: true, data: raw as ClientRequest } as ReturnType<typeof ClientRequest.safeParse>;
  }
  return ClientRequest.safeParse(raw);
}

export interface HelloReply { node: string; instance: string; segment: { path: string; size: number }; ranks: number[]; wire?: number }
export interface AllocReply { alloc: number; offset: number }
/**
 * Memory lent to a client with a put's reply (when it asks and memory is plentiful): a later send of at most
 * `bytes` bytes copies into it and names it in its put, skipping the alloc round trip. The client gives back
 * a lease it does not use with `cancel` (rid = alloc); the sidecar frees its leases when it disconnects.
 */
export interface Lease { alloc: number; offset: number; bytes: number }
export interface PutReply { lease?: Lease }
/**
 * A chunk ready to read: where it sits in the segment (or, with `inline`, the reply frame's payload holds its bytes)
 * and how to interpret it. `end` = past the last chunk.
 */
export interface RecvReply {
  end?: true;
  inline?: true;
  /** The sidecar counted the rank done with the chunk already (an inline copy): markDone needs no round trip. */
  done?: true;
  kind?: ChunkKind;
  dtype?: DType;
  shape?: number[];
  offset?: number;
  size?: number;
  producerRank?: number;
}

export type Reply = ({ rid: number; ok: true } & Record<string, unknown>) | { rid: number; ok: false; error: WireError };

// ---------- sidecar ↔ sidecar ----------

export const PeerChunk = z.object({
  op: z.literal('chunk'), id, chunk: chunkNo,
  numChunks: z.number().int().min(1).optional(), stream: z.boolean().optional(),
  dst: groups, kind: z.enum(kinds), dtype: dtype.optional(), shape: z.array(z.number().int().min(0)).optional(),
  size: z.number().int().min(0), producerRank: rank, expiresAt: z.number(), traceparent,
});
/** The first frame on a link, from the dialing (reading) side: who it is. */
export const PeerHello = z.object({ op: z.literal('hello'), node: z.string() });
export const PeerMessage = z.discriminatedUnion('op', [
  PeerHello,
  PeerChunk,
  z.object({ op: z.literal('close'), id, numChunks: z.number().int().min(0) }),
  z.object({ op: z.literal('fail'), id, reason: z.string() }),
]);
export type PeerMessage = z.infer<typeof PeerMessage>;
export type PeerChunk = z.infer<typeof PeerChunk>;

/** `PeerMessage.safeParse`, with a chunk (one per pushed chunk) checked by hand first, as `parseClientRequest` does. */
export function parsePeerMessage(raw: unknown): ReturnType<typeof PeerMessage.safeParse> {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const m = raw as Record<string, unknown>;
    if (m.op === 'chunk' && isChunkDescriptor(m) && isInt(m.producerRank, 0) && isNum(m.expiresAt)) {
      return { success: true, data: raw as PeerMessage } as ReturnType<typeof PeerMessage.safeParse>;
    }
  }
  return PeerMessage.safeParse(raw);
}
