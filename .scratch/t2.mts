import { writeFileSync } from 'node:fs';
import { getLlama } from 'node-llama-cpp';
import { ggufLlamaBytes, TINY_LLAMA_GGUF } from '../executors/models/builders/gguf-llama.ts';
import { chatmlPrompt } from '../test/helpers/gguf.ts';
writeFileSync('/tmp/tiny2.gguf', ggufLlamaBytes(TINY_LLAMA_GGUF));
const llama = await getLlama({ gpu: false, build: 'never' });
const model = await llama.loadModel({ modelPath: '/tmp/tiny2.gguf' });
const ctx = await model.createContext({ contextSize: 512, threads: 1 });
for (const p of ['hello the world', 'the cat sat on the mat', 'a', 'is this on? 12345']) {
  const seq = ctx.getSequence();
  const out: number[] = [];
  for await (const t of seq.evaluate(model.tokenize(chatmlPrompt(p), true), { temperature: 0 })) { out.push(t); if (out.length >= 20) break; }
  console.log(JSON.stringify(model.detokenize(out)));
  seq.dispose();
}
