// An app using the registered word-count task like a built-in one.
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { WordCountTask } from 'cornserve/registry/word-count';

const counter = new WordCountTask({ language: 'en' });
export default defineApp({
  name: 'word-count',
  tasks: { counter },
  request: z.object({ text: z.string() }),
  response: z.object({ words: z.number().int(), longest: z.string() }),
  async serve(req) {
    return counter.call({ text: req.text });
  },
});
