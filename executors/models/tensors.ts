/** Tensor helpers shared by the runners. */
import ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import type { Session } from './loader.js';

/** A row-major [rows, cols] float32 matrix. */
export interface Embeddings { data: Float32Array; shape: [number, number] }

export const f32 = (data: Float32Array, dims: readonly number[]) => new ort.Tensor('float32', data, dims);
export const i64 = (data: BigInt64Array, dims: readonly number[]) => new ort.Tensor('int64', data, dims);

/** Runs a session, wrapping onnxruntime failures as MODEL_RUN_FAILED. */
export async function runSession(s: Session, feeds: Record<string, ort.Tensor>, what: string): Promise<ort.InferenceSession.ReturnType> {
  try {
    return await s.run(feeds);
  } catch (e) {
    throw modelErrors.runFailed(`${what}: ${(e as Error).message}`, e);
  }
}

/** First output of a run as a float32 matrix (leading 1-dims dropped). */
export function asMatrix(t: ort.Tensor | undefined, what: string): Embeddings {
  if (!t) throw modelErrors.runFailed(`${what}: no output`);
  const dims = t.dims.slice();
  while (dims.length > 2 && dims[0] === 1) dims.shift();
  if (dims.length !== 2) throw modelErrors.runFailed(`${what}: expected a [tokens, hidden] output, got [${t.dims.join(', ')}]`);
  return { data: t.data as Float32Array, shape: [dims[0]!, dims[1]!] };
}

