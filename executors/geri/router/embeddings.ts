/**
 * The router's side of Geri's input: all chunks of a request's embeddings from the sidecar, copied and freed
 * at once (executors/common/receive-tensor.ts), before the request is enqueued — so the engine never waits on
 * the sidecar, and Geri never holds shared memory (the reference never frees it). The receive is bounded by
 * the request's deadline only: a client that goes away does not stop it, so data that arrives later is
 * still freed.
 */
import { type ReceivedTensor, ReceivedTensorError, receiveTensor, receiveTensorChunks } from '../../common/receive-tensor.js';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { SidecarError } from '../../../sidecar/errors.js';
import { producerFailureDetails } from '../../../lib/executor-errors.js';
import { GeriErrorCode, geriError } from '../errors.js';

function mapError(e: unknown, id: string, deadline: number, startedAt: number): Error {
  if (e instanceof ReceivedTensorError) return geriError(GeriErrorCode.EMBEDDINGS_INVALID, `embedding_data_id '${id}': ${e.message}`);
  if (!(e instanceof SidecarError)) return e as Error;
  switch (e.code) {
    case 'SIDECAR_TIMEOUT':
      return geriError(GeriErrorCode.EMBEDDINGS_NOT_RECEIVED,
        `no embeddings arrived under embedding_data_id '${id}' within ${Math.max(0, deadline - startedAt)} ms (the request's deadline)`, { embedding_data_id: id, deadline });
    case 'SIDECAR_UNAVAILABLE':
      return geriError(GeriErrorCode.NO_SIDECAR, `the sidecar is unavailable: ${e.reason}`);
    default:
      return geriError(GeriErrorCode.EMBEDDINGS_FAILED, `embeddings '${id}' could not be received: ${e.message}`, {
        embedding_data_id: id, sidecar: e.code, ...producerFailureDetails(e),
      });
  }
}

const noSidecar = () => geriError(GeriErrorCode.NO_SIDECAR, 'this Geri has no sidecar (CORNSERVE_SIDECAR_URL is not set), so it cannot receive embeddings');

function checkHidden(id: string, cols: number, hidden: number): void {
  if (cols !== hidden) {
    throw geriError(GeriErrorCode.HIDDEN_SIZE_MISMATCH, `embeddings '${id}' have hidden size ${cols}; this model takes ${hidden}`, {
      embedding_data_id: id, hidden: cols, expected: hidden,
    });
  }
}

/** Every chunk of `id` as one [rows, hidden] matrix, or a GeriError (404 at the deadline, 422 on a bad shape, ...). */
export async function receiveEmbeddings(sidecar: SidecarClient | undefined, id: string, hidden: number, deadline: number): Promise<ReceivedTensor> {
  if (!sidecar) throw noSidecar();
  const startedAt = Date.now();
  let t: ReceivedTensor;
  try {
    t = await receiveTensor(sidecar, id, { deadline });
  } catch (e) {
    throw mapError(e, id, deadline, startedAt);
  }
  checkHidden(id, t.cols, hidden);
  return t;
}

/**
 * The rows of `id` chunk by chunk as the producer sends them (a stream: an LLM's hidden states per generated
 * token), each [rows × hidden] values; the same errors as receiveEmbeddings (a wrong hidden size once the stream
 * ended: every chunk is still consumed and freed as it arrives).
 */
export async function* receiveEmbeddingChunks(sidecar: SidecarClient | undefined, id: string, hidden: number, deadline: number): AsyncGenerator<Float32Array> {
  if (!sidecar) throw noSidecar();
  const startedAt = Date.now();
  const chunks = receiveTensorChunks(sidecar, id, { deadline });
  let mismatch: Error | undefined;
  for (;;) {
    let r: IteratorResult<{ cols: number; data: Float32Array }>;
    try {
      r = await chunks.next();
    } catch (e) {
      throw mapError(e, id, deadline, startedAt);
    }
    if (r.done) {
      if (mismatch) throw mismatch;
      return;
    }
    if (mismatch) continue; // keep consuming (and freeing) the rest; fail at the end
    try {
      checkHidden(id, r.value.cols, hidden);
    } catch (e) {
      mismatch = e as Error;
      continue;
    }
    yield r.value.data;
  }
}
