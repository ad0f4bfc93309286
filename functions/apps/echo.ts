/**
 * The echo app: `{"text": "hi"}` -> `{"echo": "hi"}`; `{"text": "hi", "chunks": 3}` -> a stream of three
 * lines `{"echo": "hi", "index": i}`. Both paths use the same echo executor (EchoTask and EchoStreamTask
 * share one deployment). Used by the control-plane tests and the platform-overhead benchmark.
 */
import { z } from 'zod';
import { defineApp } from '../sdk/index.js';
import { EchoStreamTask, EchoTask, echoChunkSchema, echoOutputSchema } from '../tasks/echo.js';

const echo = new EchoTask({ serviceTimeMs: 0 });
const echoStream = new EchoStreamTask({ serviceTimeMs: 0 });

export default defineApp({
  name: 'echo',
  tasks: { echo, echoStream },
  request: z.object({ text: z.string(), chunks: z.number().int().positive().max(10_000).optional() }),
  response: z.union([echoChunkSchema, echoOutputSchema]), // chunk first: zod objects drop unknown keys
  async serve(request) {
    if (request.chunks === undefined) return echo.call({ text: request.text });
    return echoStream.call({ text: request.text, chunks: request.chunks });
  },
});
