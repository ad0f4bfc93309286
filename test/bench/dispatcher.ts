/**
 * Dispatcher benchmark: what a task graph costs through the dispatcher over calling the executor directly,
 * measured in the same run against one REAL echo executor process (service time 0), medians of alternating
 * rounds. ratio = figure / baseline (lower is better; the difference is the dispatcher's overhead).
 *  - 1 invocation, CloudEvent (binary mode) over HTTP to the dispatcher vs one direct POST /echo;
 *  - 1 invocation, dispatchGraph() in-process (routing + wiring + executor call, no HTTP in front) vs direct;
 *  - 3 invocations of one graph vs 3 concurrent direct calls;
 *  - a streaming graph of 100 chunks read to the end vs reading the executor's NDJSON directly.
 * Every HTTP call uses the same client, a node:http keep-alive Agent: the graphs go out through the app
 * function's own CloudEventDispatcher, the dispatcher calls the executor through its keep-alive Agent, and the
 * direct baseline posts through one too (fetch would cost ~0.1 ms more per call and flatter the ratio).
 * The dispatcher runs in this process with a MemoryStore. Run alone: node --import tsx test/bench/main.ts --only dispatcher
 */
import { TaskGraph, type TaskInvocation } from '../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask } from '../../functions/tasks/echo.js';
import { CloudEventDispatcher } from '../../functions/runtime/cloudevent-dispatcher.js';
import { dispatchGraph } from '../../control/dispatcher/dispatch.js';
import { startDispatcher } from '../../control/dispatcher/server.js';
import { MemoryStore } from '../../control/store/memory.js';
import { deployTask, startEchoExecutor } from '../helpers/executors.js';
import { alternating, formatTable, keepAlivePoster, type BenchResult } from './types.js';

async function compare(name: string, n: number, op: () => Promise<unknown>, baselineName: string, baseline: () => Promise<unknown>, target?: string): Promise<BenchResult> {
  const { figure, baseline: base } = await alternating(n, op, baseline, { warmup: 30 });
  return {
    name,
    figure,
    unit: 'ms',
    baseline: base,
    baselineName,
    ratio: figure / base,
    ...(target ? { target } : {}),
    notes: `overhead ${((figure - base) * 1000).toFixed(0)} µs; ratio = figure / baseline, lower is better`,
  };
}

export async function run(): Promise<BenchResult[]> {
  const executor = await startEchoExecutor();
  const store = new MemoryStore();
  const echoTask = new EchoTask({ serviceTimeMs: 0 });
  const streamTask = new EchoStreamTask({ serviceTimeMs: 0 });
  await deployTask(store, echoTask, [{ url: executor.url }]);
  const dispatcher = await startDispatcher({ store });
  try {
    const echo = (text: string): TaskInvocation => ({ task: echoTask, input: { text }, output: { echo: '' } });
    const post = keepAlivePoster(executor.url);
    const direct = async (body: unknown) => {
      const res = await post('/echo', JSON.stringify(body));
      if (res.status !== 200) throw new Error(`echo answered ${res.status}: ${res.text}`);
      return res.text;
    };
    const functionSide = new CloudEventDispatcher(dispatcher.url, { appId: 'bench' });
    const viaEvent = async (graph: TaskGraph) => {
      const result = await functionSide.dispatch(graph.toJSON(), { deadline: Date.now() + 60_000 });
      if (result.stream) for await (const _ of result.stream);
      return result.outputs;
    };
    const one = new TaskGraph([echo('x')]).toJSON();
    const three = new TaskGraph([echo('a'), echo('b'), echo('c')]).toJSON();
    const streaming = new TaskGraph([{ task: streamTask, input: { text: 'x', chunks: 100 }, output: streamTask.makeRecordOutput() }]).toJSON();
    const results: BenchResult[] = [];
    results.push(await compare('1-invocation graph, CloudEvent over HTTP', 400, () => viaEvent(TaskGraph.fromJSON(one)), 'direct POST /echo', () => direct({ text: 'x' }), 'overhead < 1 ms'));
    results.push(
      await compare('1-invocation graph, dispatchGraph() in-process', 400, () => dispatchGraph(TaskGraph.fromJSON(one), { deadline: Date.now() + 60_000 }, { store }), 'direct POST /echo', () =>
        direct({ text: 'x' }),
      ),
    );
    results.push(
      await compare('3-invocation graph, CloudEvent over HTTP', 300, () => viaEvent(TaskGraph.fromJSON(three)), '3 concurrent direct POST /echo', () =>
        Promise.all(['a', 'b', 'c'].map((text) => direct({ text }))),
      ),
    );
    results.push(
      await compare('streaming graph, 100 chunks read to the end', 200, () => viaEvent(TaskGraph.fromJSON(streaming)), 'direct POST /echo NDJSON, 100 chunks', () =>
        direct({ text: 'x', chunks: 100 }),
      ),
    );
    return results;
  } finally {
    await dispatcher.close(100);
    await executor.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
}
