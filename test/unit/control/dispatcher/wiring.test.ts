import test from 'ava';
import { DataForward, TaskGraph, type DataForwardJSON, type TaskInvocation } from '../../../../functions/sdk/index.js';
import { EncoderTask } from '../../../../functions/tasks/encoder.js';
import { ImageGeneratorTask } from '../../../../functions/tasks/generator.js';
import { LLMEmbeddingTask, LLMTask } from '../../../../functions/tasks/llm.js';
import { GraphInvalidError } from '../../../../lib/dispatch-errors.js';
import { wireDataForwards } from '../../../../policies/wiring.js';

const encoder = new EncoderTask({ modality: 'image', modelIds: ['m'] });
const llm = new LLMTask({ modelId: 'm' });
const llmEmbedding = new LLMEmbeddingTask({ modelId: 'm' });
const imageGen = new ImageGeneratorTask({ modelId: 'g' });

/** Invocation i runs on an executor with sidecar ranks [10i, 10i+1]. */
const ranksOf = (i: number) => [10 * i, 10 * i + 1];

const encode = (forwards: DataForward[]) => ({ task: encoder, input: { model_id: 'm', data_urls: forwards.map(() => 'http://x/img.png') }, output: { embeddings: forwards } });
const chat = (forwards: DataForward[]) => ({ task: llm, input: { model: 'm', messages: [{ role: 'user', content: 'hi' }], cornserve_embeddings: forwards }, output: {} });
const generate = (df: DataForward) => ({ task: imageGen, input: { embeddings: df, height: 8, width: 8 }, output: { generated: '' } });
/** A copy of a forward as the consumer sees it after the graph's JSON round trip (another instance, same id). */
const copy = (df: DataForward) => DataForward.fromJSON(df.toJSON());

/** Round-trips through the wire format, so every consumer holds its own DataForward instance. */
const viaJson = (invocations: TaskInvocation[]) => TaskGraph.fromJSON(new TaskGraph(invocations).toJSON());

const ranksOfForward = (df: DataForward) => ({ src: df.srcSidecarRanks, dst: df.dstSidecarRanks });

test('a producer consumed by two invocations broadcasts: one destination group per consumer, same ranks on every copy', (t) => {
  const df = DataForward.tensor();
  const graph = viaJson([encode([df]), generate(copy(df)), chat([copy(df)])]);
  wireDataForwards(graph, ranksOf);
  const producer = (graph.invocations[0]!.output as { embeddings: DataForward[] }).embeddings[0]!;
  const consumers = [
    (graph.invocations[1]!.input as { embeddings: DataForward }).embeddings,
    (graph.invocations[2]!.input as { cornserve_embeddings: DataForward[] }).cornserve_embeddings[0]!,
  ];
  t.not(consumers[0], producer);
  const expected = { src: [0, 1], dst: [[10, 11], [20, 21]] };
  t.deepEqual([producer, ...consumers].map(ranksOfForward), [expected, expected, expected]);
});

test('a chain A -> B -> C wires each forward from its producer to its consumer', (t) => {
  const a = DataForward.tensor();
  const b = DataForward.tensor();
  const graph = new TaskGraph([
    encode([a]),
    { task: llmEmbedding, input: { model: 'm', messages: [{ role: 'user', content: 'x' }], cornserve_embeddings: [copy(a)] }, output: { embeddings: b } },
    generate(copy(b)),
  ]);
  wireDataForwards(graph, ranksOf);
  const inputOfB = (graph.invocations[1]!.input as { cornserve_embeddings: DataForward[] }).cornserve_embeddings[0]!;
  const inputOfC = (graph.invocations[2]!.input as { embeddings: DataForward }).embeddings;
  t.deepEqual([ranksOfForward(a), ranksOfForward(inputOfB), ranksOfForward(b), ranksOfForward(inputOfC)], [
    { src: [0, 1], dst: [[10, 11]] },
    { src: [0, 1], dst: [[10, 11]] },
    { src: [10, 11], dst: [[20, 21]] },
    { src: [10, 11], dst: [[20, 21]] },
  ]);
});

test('a forward produced but never consumed is a 400 naming the producing invocation, its task and the forward', (t) => {
  const df = DataForward.tensor();
  const err = t.throws(() => wireDataForwards(new TaskGraph([encode([df]), chat([])]), ranksOf), { instanceOf: GraphInvalidError });
  t.is(err.status, 400);
  t.is(err.code, 'GRAPH_INVALID');
  t.is(err.message, `task graph: invocation 0 (EncoderTask ${encoder.name}) produces DataForward ${df.id}, but no later invocation consumes it`);
});

test('a forward consumed but never produced is a 400 naming the consuming invocation, its task and the forward', (t) => {
  const df = DataForward.tensor();
  const err = t.throws(() => wireDataForwards(new TaskGraph([encode([]), chat([df])]), ranksOf), { instanceOf: GraphInvalidError });
  t.is(err.status, 400);
  t.is(err.message, `task graph: invocation 1 (LLMTask ${llm.name}) consumes DataForward ${df.id}, which no earlier invocation produces`);
});

test('a forward produced by two invocations is a 400 naming both', (t) => {
  const df = DataForward.tensor();
  const err = t.throws(() => wireDataForwards(new TaskGraph([encode([df]), encode([copy(df)]), chat([copy(df)])]), ranksOf), {
    instanceOf: GraphInvalidError,
  });
  t.is(err.status, 400);
  t.is(err.message, `task graph: invocation 1 (EncoderTask ${encoder.name}) produces DataForward ${df.id}, which invocation 0 (EncoderTask ${encoder.name}) already produces`);
});

test('a forward consumed by the invocation that produces it is not produced for it (consumers must come later)', (t) => {
  const df = DataForward.tensor();
  const err = t.throws(() => wireDataForwards(new TaskGraph([{ ...encode([df]), input: { nested: [copy(df)] } }, chat([])]), ranksOf), {
    instanceOf: GraphInvalidError,
  });
  t.regex(err.message, new RegExp(`invocation 0 \\(EncoderTask .*\\) consumes DataForward ${df.id}, which no earlier invocation produces`));
});

test('every problem of a graph is listed, not only the first', (t) => {
  const orphan = DataForward.tensor();
  const missing = DataForward.tensor();
  const err = t.throws(() => wireDataForwards(new TaskGraph([encode([orphan]), chat([missing])]), ranksOf), { instanceOf: GraphInvalidError });
  t.is((err.details as string[]).length, 2);
});

test('forwards nested deep inside arrays and objects, as instances or as JSON, are found and wired', (t) => {
  const df = DataForward.tensor();
  const asJson: DataForwardJSON = df.toJSON();
  const graph = new TaskGraph([
    { task: encoder, input: {}, output: { a: [{ b: { c: [df] } }] } },
    { task: llm, input: { x: { y: [[{ z: asJson }]] } }, output: {} },
  ]);
  wireDataForwards(graph, ranksOf);
  t.deepEqual([ranksOfForward(df), { src: asJson.src_sidecar_ranks, dst: asJson.dst_sidecar_ranks }], [
    { src: [0, 1], dst: [[10, 11]] },
    { src: [0, 1], dst: [[10, 11]] },
  ]);
});

test('an invocation that consumes the same forward twice gets one destination group', (t) => {
  const df = DataForward.tensor();
  const graph = new TaskGraph([encode([df]), chat([copy(df), copy(df)])]);
  wireDataForwards(graph, ranksOf);
  t.deepEqual(df.dstSidecarRanks, [[10, 11]]);
});

test('wiring copies the rank lists, so mutating one forward never changes another', (t) => {
  const df = DataForward.tensor();
  const consumer = copy(df);
  wireDataForwards(new TaskGraph([encode([df]), chat([consumer])]), ranksOf);
  df.dstSidecarRanks![0]!.push(99);
  t.deepEqual(consumer.dstSidecarRanks, [[10, 11]]);
});
