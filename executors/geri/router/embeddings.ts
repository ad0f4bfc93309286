/**
 * The router's side of Geri's input: all chunks of a request's embeddings from the sidecar, copied and freed
 * at once (executors/common/receive-tensor.ts), before the request is enqueued — so the engine never waits on
 * the sidecar, and Geri never holds shared memory (the reference never frees it). The receive is bounded by
 * the request's deadline only: a client that goes away does not stop it, so data that arrives later is
 * still freed.
 */
import { type ReceivedTensor, ReceivedTensorError, receiveTensor } from '../../common/receive-tensor.js';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { SidecarError } from '../../../sidecar/errors.js';
import { producerFailureDetails } from '../../common/errors.js';
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

/** Every chunk of `id` as one [rows, hidden] matrix, or a GeriError (404 at the deadline, 422 on a bad shape, ...). */
export async function receiveEmbeddings(sidecar: SidecarClient | undefined, id: string, hidden: number, deadline: number): Promise<ReceivedTensor> {
  if (!sidecar) throw geriError(GeriErrorCode.NO_SIDECAR, 'this Geri has no sidecar (CORNSERVE_SIDECAR_URL is not set), so it cannot receive embeddings');
  const startedAt = Date.now();
  let t: ReceivedTensor;
  try {
    t = await receiveTensor(sidecar, id, { deadline });
  } catch (e) {
    throw mapError(e, id, deadline, startedAt);
  }
  if (t.cols !== hidden) {
    throw geriError(GeriErrorCode.HIDDEN_SIZE_MISMATCH, `embeddings '${id}' have hidden size ${t.cols}; this model takes ${hidden}`, {
      embedding_data_id: id, hidden: t.cols, expected: hidden,
    });
  }
  return t;
}
