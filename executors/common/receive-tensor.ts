/**
 * The consumer side of a forwarded tensor (embeddings, hidden states): every chunk of `id` from the sidecar,
 * in order until the end (`recv` → null), each copied out of shared memory and marked done at once. So the
 * sidecar's memory is held only while a chunk is copied, whatever happens afterwards (a bad shape, the
 * client gone, an engine error), and an unusable chunk is still consumed and freed.
 *
 * Chunks are concatenated along their leading axes: the result is a [rows, cols] float32 matrix with
 * cols = the last dimension (the same in every chunk). Other float dtypes are converted on receive.
 *
 *   const t = await receiveTensor(sidecar, forward.id, { deadline });   // {rows, cols, data, chunks}
 *
 * Failures: the sidecar's errors as they are (SIDECAR_TIMEOUT at the deadline, SIDECAR_PRODUCER_FAILED,
 * ...), or a ReceivedTensorError when the data arrived but is not a float tensor of consistent shape.
 */
import type { SidecarClient } from '../../sidecar/client/client.js';
import { isTensor } from '../../sidecar/tensor.js';

/** How long marking a received chunk done may take (it must happen even past the request's deadline). */
const MARK_DONE_TIMEOUT_MS = 30_000;

export interface ReceivedTensor {
  rows: number;
  cols: number;
  /** Row-major [rows, cols], owned by the caller (not a view into shared memory). */
  data: Float32Array;
  chunks: number;
}

/** The data arrived but cannot be used as a [rows, cols] float matrix. */
export class ReceivedTensorError extends Error {
  override readonly name = 'ReceivedTensorError';
}

export interface ReceiveOptions {
  /** Epoch ms: a chunk that has not arrived by then fails the receive with SIDECAR_TIMEOUT. */
  deadline: number;
  signal?: AbortSignal;
}

/** What is wrong with one received chunk, or undefined when it is a usable float matrix. */
function problemOf(value: unknown, chunk: number, cols: number | undefined): string | undefined {
  if (!isTensor(value) || value.dtype !== 'f32') return `chunk ${chunk} is not a float tensor`;
  const last = value.shape.at(-1);
  if (value.shape.length === 0 || !last) return `chunk ${chunk} has shape [${value.shape.join(', ')}]: expected [rows, cols]`;
  if (cols !== undefined && last !== cols) return `chunk ${chunk} has ${last} columns, chunk 0 has ${cols}`;
  return undefined;
}

/**
 * The chunks of `id` one by one as they arrive (a streaming producer's chunks while it still produces), each a
 * [rows, cols] float matrix copied out of shared memory and marked done. A bad chunk is still consumed (and so
 * are the rest, so nothing stays in shared memory); the generator then throws a ReceivedTensorError at the end.
 */
export async function* receiveTensorChunks(sidecar: SidecarClient, id: string, o: ReceiveOptions): AsyncGenerator<{ rows: number; cols: number; data: Float32Array }> {
  let cols: number | undefined;
  let problem: string | undefined;
  let chunk = 0;
  for (; ; chunk++) {
    const value = await sidecar.recv(id, chunk, { deadline: o.deadline, dtype: 'f32', ...(o.signal ? { signal: o.signal } : {}) });
    if (value === null) break;
    let got: Float32Array | undefined;
    try {
      const p = problemOf(value, chunk, cols);
      if (p) {
        problem ??= p;
      } else if (!problem) {
        const t = value as { shape: number[]; data: Float32Array };
        cols = t.shape.at(-1)!;
        got = t.data.slice(); // a copy: the view is only valid until markDone
      }
    } finally {
      await sidecar.markDone(id, chunk, { group: true, timeoutMs: MARK_DONE_TIMEOUT_MS }).catch(() => undefined);
    }
    if (got) yield { rows: got.length / cols!, cols: cols!, data: got };
  }
  if (problem) throw new ReceivedTensorError(`tensor ${id}: ${problem}`);
  if (chunk === 0 || cols === undefined) throw new ReceivedTensorError(`tensor ${id} has no chunks`);
}

export async function receiveTensor(sidecar: SidecarClient, id: string, o: ReceiveOptions): Promise<ReceivedTensor> {
  const parts: Float32Array[] = [];
  let cols = 0;
  for await (const c of receiveTensorChunks(sidecar, id, o)) {
    cols = c.cols;
    parts.push(c.data);
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const data = parts.length === 1 ? parts[0]! : new Float32Array(total);
  if (parts.length > 1) {
    let off = 0;
    for (const p of parts) {
      data.set(p, off);
      off += p.length;
    }
  }
  return { rows: total / cols, cols, data, chunks: parts.length };
}

/**
 * Receives and frees `id` in the background, ignoring the result: for a request rejected before it read its
 * input, so the producer's data does not sit in shared memory until it expires. Bounded by `deadline`.
 */
export function discardTensor(sidecar: SidecarClient, id: string, deadline: number): void {
  void receiveTensor(sidecar, id, { deadline }).catch(() => undefined);
}
