import test from 'ava';
import { ValidationError, dedupeUnitTasks, discoverUnitTasks, type TaskGraphJSON } from '../../../../functions/sdk/index.js';
import { MLLMTask, type ChatChunk, type ChatRequest, type EncoderInput, type EncoderOutput } from '../../../../functions/tasks/index.js';
import { FakeDispatcher, textChunk } from '../../../helpers/fake-dispatcher.js';
import { MODEL, audio, chat, image, mixedMedia, recordGraph, text, video } from '../fixtures.js';

const mllm = (options: Partial<ConstructorParameters<typeof MLLMTask>[0]> = {}) =>
  new MLLMTask({ modelId: MODEL, modalities: ['image', 'video'], ...options });

/** [task class, modality, data urls] per invocation. */
const shape = (g: TaskGraphJSON) =>
  g.invocations.map((inv) => [inv.task_class, (inv.task.config as { modality?: string }).modality ?? null, (inv.input as Partial<EncoderInput>).data_urls ?? null]);

const producedIds = (g: TaskGraphJSON) =>
  g.invocations.filter((inv) => inv.task_class === 'EncoderTask').flatMap((inv) => (inv.output as EncoderOutput).embeddings.map((e) => e.id));
const llmInputIds = (g: TaskGraphJSON) => (g.invocations.at(-1)!.input as ChatRequest).cornserve_embeddings.map((e) => e.id);
/** DataForward id -> the URL its encoder invocation encoded (data_urls and embeddings pair up by index). */
const urlById = (g: TaskGraphJSON) =>
  new Map(
    g.invocations
      .filter((inv) => inv.task_class === 'EncoderTask')
      .flatMap((inv) => (inv.output as EncoderOutput).embeddings.map((e, k) => [e.id, (inv.input as EncoderInput).data_urls[k]!] as const)),
  );

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
const contents = (chunks: ChatChunk[]) => chunks.map((c) => c.choices[0]!.delta.content);

// ---------- graph shapes ----------

test('2 images + 2 videos, one encoder call per item: 5 invocations in message order', async (t) => {
  t.deepEqual(shape(await recordGraph(mllm(), mixedMedia())), [
    ['EncoderTask', 'image', ['http://x/a.png']],
    ['EncoderTask', 'video', ['http://x/b.mp4']],
    ['EncoderTask', 'image', ['http://x/c.png']],
    ['EncoderTask', 'video', ['http://x/d.mp4']],
    ['LLMTask', null, null],
  ]);
});

test('2 images + 2 videos, coalesced: 3 invocations, one per modality, items in message order', async (t) => {
  t.deepEqual(shape(await recordGraph(mllm({ coalesceEncoderInvocations: true }), mixedMedia())), [
    ['EncoderTask', 'image', ['http://x/a.png', 'http://x/c.png']],
    ['EncoderTask', 'video', ['http://x/b.mp4', 'http://x/d.mp4']],
    ['LLMTask', null, null],
  ]);
});

test('the LLM input holds exactly the DataForward ids the encoders produced', async (t) => {
  const g = await recordGraph(mllm(), mixedMedia());
  t.deepEqual(llmInputIds(g), producedIds(g));
});

test('coalesced, the LLM input holds the encoders DataForward ids re-ordered to message order', async (t) => {
  const g = await recordGraph(mllm({ coalesceEncoderInvocations: true }), mixedMedia());
  const urls = urlById(g);
  t.deepEqual(
    llmInputIds(g).map((id) => urls.get(id)),
    ['http://x/a.png', 'http://x/b.mp4', 'http://x/c.png', 'http://x/d.mp4'],
  );
});

test('every DataForward id in the graph is a distinct lowercase hex id', async (t) => {
  const ids = producedIds(await recordGraph(mllm(), mixedMedia()));
  t.deepEqual([new Set(ids).size, ids.every((id) => /^[0-9a-f]+$/.test(id))], [4, true]);
});

test('a text-only request is one LLM invocation with no embeddings', async (t) => {
  const g = await recordGraph(mllm(), chat(text('hello')));
  t.deepEqual([shape(g), llmInputIds(g)], [[['LLMTask', null, null]], []]);
});

test('encoders are asked for the MLLM model id', async (t) => {
  const g = await recordGraph(mllm(), chat(image('http://x/a.png')));
  t.is((g.invocations[0]!.input as EncoderInput).model_id, MODEL);
});

test('without encoder fission the LLM gets the media itself: one invocation, receiveEmbeddings off', async (t) => {
  const g = await recordGraph(mllm({ encoderFission: false }), mixedMedia());
  t.deepEqual(
    g.invocations.map((inv) => [inv.task_class, inv.task.config.receiveEmbeddings, (inv.input as ChatRequest).cornserve_embeddings]),
    [['LLMTask', false, []]],
  );
});

test('a modality the MLLM did not declare is a ValidationError naming the part, and nothing is dispatched', async (t) => {
  const fake = new FakeDispatcher();
  await t.throwsAsync(mllm({ modalities: ['image'] }).call(chat(image('http://x/a.png'), audio('http://x/b.wav')), { dispatcher: fake }), {
    instanceOf: ValidationError,
    message: /multimodal part 1\): modality audio is not declared \(declared: image\)/,
  });
  t.is(fake.dispatched.length, 0);
});

test('an MLLM has one encoder per declared modality and an LLM that receives embeddings', (t) => {
  const m = mllm({ modalities: ['audio', 'image'] });
  t.deepEqual(
    discoverUnitTasks([m]).map((u) => [u.constructor.name, u.config]),
    [
      ['EncoderTask', { modality: 'audio', modelIds: [MODEL], maxBatchSize: 1 }],
      ['EncoderTask', { modality: 'image', modelIds: [MODEL], maxBatchSize: 1 }],
      ['LLMTask', { modelId: MODEL, receiveEmbeddings: true }],
    ],
  );
});

test('two MLLMs given the same encoder model ids share one encoder deployment', (t) => {
  const shared = ['org/llm-a', 'org/llm-b'];
  const a = new MLLMTask({ modelId: 'org/llm-a', modalities: ['image'], encoderModelIds: shared });
  const b = new MLLMTask({ modelId: 'org/llm-b', modalities: ['image'], encoderModelIds: shared });
  t.deepEqual(
    dedupeUnitTasks(discoverUnitTasks([a, b])).map((u) => u.name),
    ['encoder-image-llm-a', 'llm-llm-a', 'llm-llm-b'],
  );
});

test('invalid MLLM options are a ValidationError naming the option', (t) => {
  t.throws(() => new MLLMTask({ modelId: MODEL, modalities: ['smell' as 'image'] }), { instanceOf: ValidationError, message: /modalities\.0/ });
});

// ---------- call(): real outputs ----------

test('call() of an MLLM returns the LLM real stream', async (t) => {
  const fake = new FakeDispatcher({ streamChunks: [textChunk('Hel', 0), textChunk('lo', 1)] });
  const stream = await mllm().call(chat(text('hi'), image('http://x/a.png')), { dispatcher: fake });
  t.deepEqual(contents(await collect(stream)), ['Hel', 'lo']);
});

test('an MLLM stream split into arbitrary byte pieces still parses chunk by chunk', async (t) => {
  const fake = new FakeDispatcher({ streamChunks: [textChunk('h\u00e9llo', 0), textChunk('\u{1F600}', 1)], streamPieceBytes: 7 });
  const stream = await mllm().call(chat(text('hi')), { dispatcher: fake });
  t.deepEqual(contents(await collect(stream)), ['h\u00e9llo', '\u{1F600}']);
});

test('two concurrent recordings of the same MLLM do not interfere', async (t) => {
  const m = mllm();
  const fake = new FakeDispatcher({
    // The first call's graph answers last, so the two replays interleave.
    delayMs: (_g, n) => (n === 0 ? 50 : 0),
    streamChunks: (g) => [textChunk(g.invocations.flatMap((inv) => (inv.input as Partial<EncoderInput>).data_urls ?? []).join(' '))],
  });
  const [one, two] = await Promise.all([
    m.call(chat(image('http://x/1.png')), { dispatcher: fake }),
    m.call(chat(video('http://x/2.mp4'), video('http://x/3.mp4')), { dispatcher: fake }),
  ]);
  t.deepEqual(
    [fake.graphs.map(shape), contents(await collect(one)), contents(await collect(two))],
    [
      [
        [['EncoderTask', 'image', ['http://x/1.png']], ['LLMTask', null, null]],
        [['EncoderTask', 'video', ['http://x/2.mp4']], ['EncoderTask', 'video', ['http://x/3.mp4']], ['LLMTask', null, null]],
      ],
      ['http://x/1.png'],
      ['http://x/2.mp4 http://x/3.mp4'],
    ],
  );
});
