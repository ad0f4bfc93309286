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
export const WIRE_VERSION = 2;
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
export const DoneReq = z.object({ op: z.literal('done'), rid: z.number(), id, chunk: chunkNo, group: z.boolean().optional(), traceparent });
export const CloseReq = z.object({ op: z.literal('close'), rid: z.number(), id, numChunks: z.number().int().min(0), dst: groups.optional(), traceparent });
export const FailReq = z.object({ op: z.literal('fail'), rid: z.number(), id, reason: z.string(), dst: groups.optional(), traceparent });
export const CancelReq = z.object({ op: z.literal('cancel'), rid: z.number() });

export const ClientRequest = z.discriminatedUnion('op', [HelloReq, AllocReq, PutReq, RecvReq, DoneReq, CloseReq, FailReq, CancelReq]);
export type ClientRequest = z.infer<typeof ClientRequest>;
export type PutReq = z.infer<typeof PutReq>;

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
