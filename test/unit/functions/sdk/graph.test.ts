import test from 'ava';
import { CompositeTask, DataForward, TaskGraph, ValidationError, toJsonValue, type Stream, type TaskGraphJSON } from '../../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask, LLMTask, MLLMTask, type EchoChunk } from '../../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../../helpers/fake-dispatcher.js';
import { MODEL, chat, image, recordGraph, text } from '../fixtures.js';

const mllm = new MLLMTask({ modelId: MODEL, modalities: ['image'] });
const recordMllm = () => recordGraph(mllm, chat(text('hi'), image('http://x/a.png')));

/** A deep copy of `graph` changed by `edit` (tamper with a recording). */
const tampered = (graph: TaskGraphJSON, edit: (g: any) => void): unknown => {
  const copy = toJsonValue<TaskGraphJSON>(graph);
  edit(copy);
  return copy;
};

const rejects = (t: import('ava').ExecutionContext, json: unknown, message: RegExp) =>
  t.throws(() => TaskGraph.fromJSON(json), { instanceOf: ValidationError, message });

// ---------- round trip ----------

test('a recorded graph with DataForwards and a stream output survives JSON -> fromJSON -> JSON unchanged', async (t) => {
  const json = await recordMllm();
  t.deepEqual(TaskGraph.fromJSON(json).toJSON(), json);
});

test('forDispatch gives the graph fromJSON gives for its JSON, with objects of its own', async (t) => {
  const recorded = TaskGraph.fromJSON(await recordMllm());
  const graph = recorded.forDispatch();
  t.deepEqual(graph.toJSON(), TaskGraph.fromJSON(recorded.toJSON()).toJSON());
  t.deepEqual(graph.invocations.map((inv) => inv.task), recorded.invocations.map((inv) => inv.task));
  // Wiring fills in ranks on the dispatched copy; the recorded graph keeps its own forwards untouched.
  const produced = (graph.invocations[0]!.output as { embeddings: DataForward[] }).embeddings[0]!;
  const original = (recorded.invocations[0]!.output as { embeddings: DataForward[] }).embeddings[0]!;
  t.true(produced instanceof DataForward);
  t.not(produced, original);
  produced.srcSidecarRanks = [3];
  t.is(original.srcSidecarRanks, null);
});

test('fromJSON rebuilds DataForwards as instances with the recorded ids', async (t) => {
  const json = await recordMllm();
  const graph = TaskGraph.fromJSON(json);
  const produced = (graph.invocations[0]!.output as { embeddings: DataForward[] }).embeddings[0]!;
  const consumed = (graph.invocations[1]!.input as { cornserve_embeddings: DataForward[] }).cornserve_embeddings[0]!;
  t.true(produced instanceof DataForward && consumed instanceof DataForward && produced.id === consumed.id);
});

test('fromJSON rebuilds the tasks with their classes and recorded ids', async (t) => {
  const graph = TaskGraph.fromJSON(await recordMllm());
  t.deepEqual(
    graph.invocations.map((inv) => [inv.task.constructor.name, inv.task.id]),
    [
      ['EncoderTask', mllm.encoders.image!.id],
      ['LLMTask', mllm.llm.id],
    ],
  );
});

test('a graph whose last invocation streams is marked is_streaming', async (t) => {
  t.true((await recordMllm()).is_streaming);
});

test('a graph of non-streaming invocations is not streaming', async (t) => {
  t.false((await recordGraph(new EchoTask({}), { text: 'a' })).is_streaming);
});

// ---------- fromJSON rejects bad graphs, naming the path ----------

test('fromJSON rejects an unknown task class at invocations.N.task_class', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.invocations[1].task_class = 'NoSuchTask'));
  rejects(t, json, /invocations\.1\.task_class: unknown unit task class NoSuchTask/);
});

test('fromJSON rejects a bad input at its path inside the invocation', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.invocations[0].input.data_urls = []));
  rejects(t, json, /invocations\.0\.input\.data_urls: at least one URL/);
});

test('fromJSON rejects an input of the wrong type at the invocation input itself', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.invocations[0].input = 7));
  rejects(t, json, /invocations\.0\.input: /);
});

test('fromJSON rejects a bad output at its path inside the invocation', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.invocations[0].output.embeddings[0].id = 'NOT-HEX'));
  rejects(t, json, /invocations\.0\.output\.embeddings\.0/);
});

test('fromJSON rejects a bad task config at invocations.N.task.config', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.invocations[0].task.config.modelIds = []));
  rejects(t, json, /invocations\.0\.task\.config\.modelIds: at least one model id/);
});

test('fromJSON rejects a graph without invocations', (t) => {
  rejects(t, { invocations: [], is_streaming: false }, /invocations: a task graph needs at least one invocation/);
});

test('fromJSON rejects a value that is not a graph, naming the missing fields', (t) => {
  rejects(t, { nope: 1 }, /invocations: .*; is_streaming: /);
});

test('fromJSON rejects an is_streaming flag that does not match the invocations', async (t) => {
  const json = tampered(await recordMllm(), (g) => (g.is_streaming = false));
  rejects(t, json, /is_streaming: must be true/);
});

test('fromJSON rejects a streaming invocation that is not the last one', async (t) => {
  const json = tampered(await recordMllm(), (g) => g.invocations.reverse());
  rejects(t, json, /invocations\.0: llm-tiny-vlm streams its output, but only the last invocation/);
});

// ---------- only the last invocation may stream ----------

class StreamThenEcho extends CompositeTask<{ text: string }, string> {
  readonly streamer = new EchoStreamTask({});
  readonly echo = new EchoTask({});
  get name() {
    return 'stream-then-echo';
  }
  invoke(input: { text: string }): string {
    this.streamer.invoke({ text: input.text, chunks: 2 });
    return this.echo.invoke(input).echo;
  }
}

test('call() of a composite that streams before its last invocation fails at record time, before dispatch', async (t) => {
  const fake = new FakeDispatcher();
  await t.throwsAsync(new StreamThenEcho().call({ text: 'a' }, { dispatcher: fake }), {
    instanceOf: ValidationError,
    message: /invocations\.0: echo-0ms streams its output, but only the last invocation of a graph may stream/,
  });
  t.is(fake.dispatched.length, 0);
});

test('a TaskGraph built by hand enforces the same rule', (t) => {
  const streamer = new EchoStreamTask({});
  const echo = new EchoTask({});
  const placeholder = streamer.makeRecordOutput() as Stream<EchoChunk>;
  t.throws(
    () =>
      new TaskGraph([
        { task: streamer, input: { text: 'a' }, output: placeholder },
        { task: echo, input: { text: 'a' }, output: { echo: '' } },
      ]),
    { instanceOf: ValidationError, message: /only the last invocation/ },
  );
});

test('a hand-built graph serializes a stream output as {} and task_class as the concrete class', (t) => {
  const llm = new LLMTask({ modelId: MODEL });
  const json = new TaskGraph([{ task: llm, input: { model: MODEL, messages: [] }, output: llm.makeRecordOutput() }]).toJSON();
  t.deepEqual(json.invocations.map((i) => [i.task_class, i.output]), [['LLMTask', {}]]);
});
