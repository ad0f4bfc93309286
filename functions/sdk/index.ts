/**
 * The Cornserve app SDK: tasks, record and replay, data forwards, streams and apps.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * import { defineApp } from 'cornserve/functions/sdk';
 * import { EncoderTask } from 'cornserve/functions/tasks';
 *
 * const encoder = new EncoderTask({ modality: 'image', modelIds: ['cornserve/tiny-vlm-a'] });
 * export default defineApp({
 *   name: 'embed',
 *   tasks: { encoder },
 *   request: z.object({ url: z.string() }),
 *   response: z.object({ id: z.string() }),
 *   async serve(req) {
 *     const out = await encoder.call({ model_id: 'cornserve/tiny-vlm-a', data_urls: [req.url] });
 *     return { id: out.embeddings[0]!.id };
 *   },
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
