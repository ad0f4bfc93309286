/**
 * The model directories a task's `modelId` may name a folder in. Kept free of onnxruntime imports so the CLI
 * (`cornserve up --models`) can use it without loading the runtime.
 */
import { delimiter, resolve } from 'node:path';

/** Colon-separated model directories (`cornserve up --models DIR` sets it for every executor). */
export const MODELS_ENV = 'CORNSERVE_MODELS';

/** The model directories to search by name: `extra` first, then $CORNSERVE_MODELS (absolute, deduplicated). */
export function modelDirs(extra: readonly string[] = [], env = process.env[MODELS_ENV]): string[] {
  const all = [...extra, ...(env ?? '').split(delimiter)].filter(Boolean).map((d) => resolve(d));
  return [...new Set(all)];
}
