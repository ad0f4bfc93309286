/** Tensor helpers shared by the runners. */
import ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import type { Session } from './loader.js';

/** A row-major [rows, cols] float32 matrix. */
export interface Embeddings { data: Float32Array; shape: [number, number] }

export const f32 = (data: Float32Array, dims: readonly number[]) => new ort.Tensor('float32', data, dims);
export const i64 = (data: BigInt64Array, dims: readonly number[]) => new ort.Tensor('int64', data, dims);

/**
 * Runs a session, wrapping onnxruntime failures as MODEL_RUN_FAILED. `fetches` names outputs with tensors the
 * caller allocated: onnxruntime writes those outputs into them (e.g. straight into shared memory).
 */
export async function runSession(
  s: Session, feeds: Record<string, ort.Tensor>, what: string, fetches?: Record<string, ort.Tensor>,
): Promise<ort.InferenceSession.ReturnType> {
  try {
    return await (fetches ? s.run(feeds, fetches) : s.run(feeds));
  } catch (e) {
    throw modelErrors.runFailed(`${what}: ${(e as Error).message}`, e);
  }
}

/** First output of a run as a float32 matrix (leading 1-dims dropped). */
export function asMatrix(t: ort.Tensor | undefined, what: string): Embeddings {
  if (!t) throw modelErrors.runFailed(`${what}: no output`);
  const shape = matrixShape(t.dims);
  if (!shape) throw modelErrors.runFailed(`${what}: expected a [tokens, hidden] output, got [${t.dims.join(', ')}]`);
  return { data: t.data as Float32Array, shape };
}

/** Output dims as [tokens, hidden] (leading 1-dims dropped), or undefined when they are not a matrix. */
export function matrixShape(dims: readonly number[]): [number, number] | undefined {
  const d = dims.slice();
  while (d.length > 2 && d[0] === 1) d.shift();
  return d.length === 2 ? [d[0]!, d[1]!] : undefined;
}

