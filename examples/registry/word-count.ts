// A user-defined unit task: register with `cornserve tasks register examples/registry/word-count.ts`,
// then import it in an app as `import { WordCountTask } from 'cornserve/registry/word-count'`.
import { z } from 'zod';
import { defineUnitTask } from 'cornserve/sdk';

export default defineUnitTask({
  name: 'word-count',
  className: 'WordCountTask',
  // Equal configs share one deployment, as with built-in tasks.
  config: z.object({ language: z.string().default('en') }),
  input: z.object({ text: z.string() }),
  output: z.object({ words: z.number().int(), longest: z.string() }),
  descriptor: {
    kind: 'http-json',
    path: '/count',
    launch: { script: 'examples/registry/word-count-server.mjs', image: 'example/word-count', healthPath: '/health', devicesPerExecutor: 1 },
  },
});
