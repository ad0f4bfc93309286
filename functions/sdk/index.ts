/**
 * The Cornserve app SDK: tasks, record and replay, data forwards, streams and apps.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * import { defineApp } from '../sdk/index.js';
 * import { MLLMTask, chatRequestSchema, chatChunkSchema } from '../tasks/index.js';
 *
 * // One image encoder + one LLM; the encoder's embeddings travel to the LLM through the sidecars.
 * const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image'] });
 * export default defineApp({
 *   name: 'mllm',
 *   tasks: { mllm },
 *   request: chatRequestSchema,
 *   response: chatChunkSchema, // serve streams: each chunk is validated
 *   serve: (req) => mllm.call(req),
 * });
 * ```
 *
 * This package imports nothing from control/, executors/ or sidecar/: an app's dependencies stay small.
 */
export * from './errors.js';
export { randomHex, canonicalJson, toJsonValue } from './ids.js';
export * from './data-forward.js';
export * from './stream.js';
export * from './task.js';
export * from './graph.js';
export * from './dispatch.js';
export { TaskContext, runInRequestScope, currentRequestScope, currentContext, type RequestScope, type CallOptions } from './context.js';
export * from './app.js';
export * from './registered.js';
