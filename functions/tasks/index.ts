/** Built-in tasks: definitions only; executors and descriptors live in executors/ and control/. */
export * from '../../lib/openai.js';
export * from './encoder.js';
export * from './llm.js';
export * from './generator.js';
export * from './mllm.js';
export * from './any-to-any.js';
export * from './echo.js';
