/** The FakeDispatcher answers like the real dispatcher: these tests pin the behaviour the SDK tests rely on. */
import test from 'ava';
import { CompositeTask, DispatchError, ValidationError, toJsonValue, type DataForward, type TaskGraphJSON } from '../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask, EncoderTask, ImageGeneratorTask, MLLMTask } from '../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../helpers/fake-dispatcher.js';
import { MODEL, chat, image, recordGraph } from './fixtures.js';

/** One encoder output consumed by two image generators (broadcast). */
class Broadcast extends CompositeTask<{ url: string }, string[]> {
  readonly encoder = new EncoderTask({ modality: 'image', modelIds: [MODEL] });
  readonly small = new ImageGeneratorTask({ modelId: 'org/gen-small' });
  readonly large = new ImageGeneratorTask({ modelId: 'org/gen-large' });
  get name() {
    return 'broadcast';
  }
  invoke(input: { url: string }): string[] {
    const df = this.encoder.invoke({ model_id: MODEL, data_urls: [input.url] }).embeddings[0]!;
    return [this.small, this.large].map((g) => g.invoke({ embeddings: df, height: 8, width: 8 }).generated);
  }
}

const deadline = () => Date.now() + 60_000;

test('a forward consumed by two invocations gets one destination group per consumer, on every copy', async (t) => {
  const fake = new FakeDispatcher({ ranks: (_inv, i) => [i * 10] });
  const { outputs } = await fake.dispatch(await recordGraph(new Broadcast(), { url: 'u' }), { deadline: deadline() });
  const produced = (outputs[0] as { embeddings: ReturnType<DataForward['toJSON']>[] }).embeddings[0]!;
  t.like(produced, { src_sidecar_ranks: [0], dst_sidecar_ranks: [[10], [20]] });
});

test('by default two invocations of one task share an executor rank', async (t) => {
  const graph = await recordGraph(new MLLMTask({ modelId: MODEL, modalities: ['image'] }), chat(image('http://x/a.png'), image('http://x/b.png')));
  const { outputs } = await new FakeDispatcher().dispatch(graph, { deadline: deadline() });
  const ranks = outputs.slice(0, 2).map((o) => {
    const df = (o as { embeddings: ReturnType<DataForward['toJSON']>[] }).embeddings[0]!;
    return [df.src_sidecar_ranks, df.dst_sidecar_ranks];
  });
  t.deepEqual(ranks, [
    [[0], [[1]]],
    [[0], [[1]]],
  ]);
});

test('a forward consumed but never produced fails the graph with GRAPH_INVALID', async (t) => {
  const graph = toJsonValue<TaskGraphJSON>(await recordGraph(new Broadcast(), { url: 'u' }));
  graph.invocations.shift();
  const err = await t.throwsAsync(new FakeDispatcher().dispatch(graph, { deadline: deadline() }), { instanceOf: DispatchError });
  t.deepEqual([err!.code, err!.status, /which no earlier invocation produces/.test(err!.message)], ['GRAPH_INVALID', 400, true]);
});

test('a forward produced but never consumed fails the graph, as the real dispatcher does', async (t) => {
  const encoder = new EncoderTask({ modality: 'image', modelIds: [MODEL] });
  await t.throwsAsync(encoder.call({ model_id: MODEL, data_urls: ['u'] }, { dispatcher: new FakeDispatcher() }), {
    instanceOf: DispatchError,
    message: /produces DataForward [0-9a-f]+, but no later invocation consumes it/,
  });
});

test('a graph that fromJSON rejects is refused with 422 and the path', async (t) => {
  const graph = toJsonValue<TaskGraphJSON>(await recordGraph(new EchoTask({}), { text: 'a' }));
  (graph.invocations[0]!.input as { text: unknown }).text = 3;
  const err = await t.throwsAsync(new FakeDispatcher().dispatch(graph, { deadline: deadline() }), { instanceOf: DispatchError });
  t.deepEqual([err!.status, /invocations\.0\.input\.text/.test(err!.message)], [422, true]);
});

test('a delay that outlasts the deadline fails with DEADLINE_EXCEEDED', async (t) => {
  const fake = new FakeDispatcher({ delayMs: 30_000 });
  await t.throwsAsync(new EchoTask({}).call({ text: 'a' }, { dispatcher: fake, timeoutMs: 20 }), { instanceOf: DispatchError, message: /deadline/ });
});

test('every dispatched graph is recorded with its options, in arrival order', async (t) => {
  const fake = new FakeDispatcher();
  const echo = new EchoTask({});
  await echo.call({ text: 'a' }, { dispatcher: fake });
  await echo.call({ text: 'b' }, { dispatcher: fake });
  t.deepEqual(fake.graphs.map((g) => g.invocations[0]!.input), [{ text: 'a' }, { text: 'b' }]);
});

test('raw stream lines reach the caller stream as they are, so a bad chunk fails there', async (t) => {
  const fake = new FakeDispatcher({ streamLines: ['{"echo":"a","index":0}', '{"echo":"b"}'] });
  const stream = await new EchoStreamTask({}).call({ text: 'a', chunks: 2 }, { dispatcher: fake });
  const seen: string[] = [];
  await t.throwsAsync(
    (async () => {
      for await (const c of stream) seen.push(c.echo);
    })(),
    { instanceOf: ValidationError, message: /stream chunk: index: / },
  );
  t.deepEqual(seen, ['a']);
});
