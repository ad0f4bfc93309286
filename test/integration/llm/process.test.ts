/** The LLM executor as the platform runs it: a child process started from the descriptor's LaunchSpec. */
import test from 'ava';
import { llmDescriptor } from '../../../control/descriptors/llm.js';
import { EXECUTOR_ENV } from '../../../lib/descriptor.js';
import { dispatchGraph } from '../../../control/dispatcher/dispatch.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { generate } from '../../../executors/llm/direct.js';
import { mediaUrl } from '../../../executors/llm/multimodal.js';
import { TaskGraph, randomHex } from '../../../functions/sdk/index.js';
import { LLMTask } from '../../../functions/tasks/llm.js';
import { chatRequestSchema } from '../../../lib/openai.js';
import { tensor } from '../../../sidecar/tensor.js';
import { deployTask } from '../../helpers/executors.js';
import { launchExecutor, llm, postChat, userPrompt } from '../../helpers/llm.js';
import { modelsDir } from '../../helpers/models.js';
import { startSidecars } from '../../helpers/sidecar.js';

test('an LLMTask graph dispatched to the executor process streams the direct loop\'s greedy output', async (t) => {
  const model = await llm('tiny-lm-b');
  const task = new LLMTask({ modelId: 'cornserve/tiny-vlm-b', receiveEmbeddings: false });
  const exec = await launchExecutor(llmDescriptor.launch(task), { CORNSERVE_MODELS_DIR: await modelsDir(), [EXECUTOR_ENV.executorId]: 'llm-test' });
  t.teardown(() => exec.stop());
  const store = new MemoryStore();
  await deployTask(store, task, [{ url: exec.url }]);
  const input = chatRequestSchema.parse({ model: 'cornserve/tiny-vlm-b', messages: [{ role: 'user', content: 'dispatch me' }], max_tokens: 10, temperature: 0 });
  const result = await dispatchGraph(new TaskGraph([{ task, input, output: task.makeRecordOutput() }]), { deadline: Date.now() + 60_000 }, { store });
  let text = '';
  for await (const line of result.stream!) text += JSON.parse(line).choices[0]?.delta?.content ?? '';
  const direct = await generate(model, userPrompt(model, 'dispatch me'), { maxTokens: 10, temperature: 0 });
  t.is(text, direct.text);
});

test('the executor process finds its node sidecar from CORNSERVE_SIDECAR_URL (its http URL) and receives embeddings', async (t) => {
  const model = await llm('tiny-lm-b');
  const cluster = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => cluster.stop());
  const task = new LLMTask({ modelId: 'cornserve/tiny-vlm-b' });
  const exec = await launchExecutor(llmDescriptor.launch(task), {
    CORNSERVE_MODELS_DIR: await modelsDir(), [EXECUTOR_ENV.sidecar]: cluster.nodes[0]!.httpUrl, [EXECUTOR_ENV.ranks]: '1',
  });
  t.teardown(() => exec.stop());
  const id = randomHex();
  const rows = Float32Array.from({ length: 4 * model.config.hidden }, (_, i) => Math.cos(i));
  await (await cluster.client(0)).send(tensor('f32', [4, model.config.hidden], rows), id, [[1]]);
  const content = [{ type: 'image_url' as const, image_url: { url: mediaUrl('image', id, 'http://x/i.png') } }];
  const r = await postChat(exec.url, { model: 'cornserve/tiny-vlm-b', messages: [{ role: 'user', content }], max_tokens: 8, temperature: 0 });
  t.is(r.status, 200, JSON.stringify(r.body));
  const direct = await generate(model, userPrompt(model, content, [{ rows: 4, data: rows }]), { maxTokens: 8, temperature: 0 });
  t.is(r.body.choices[0].message.content, direct.text);
});

test('the executor prints its options with --help', async (t) => {
  const { execFile } = await import('node:child_process');
  const { repoRoot } = await import('../../helpers/repo.js');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', 'executors/llm/main.ts', '--help'], { cwd: repoRoot }, (e, stdout) => (e ? reject(e) : resolve(stdout))));
  for (const flag of ['--model-id', '--max-batch', '--sidecar-socket', '--no-receive-embeddings']) t.true(out.includes(flag), flag);
});
