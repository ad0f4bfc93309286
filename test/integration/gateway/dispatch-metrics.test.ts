/**
 * Metrics wherever dispatch runs: under `cornserve up` the app functions run their task graphs themselves, and the
 * gateway's GET /metrics still shows the dispatcher's series for them (real app-function and executor processes).
 */
import test from 'ava';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';

/** One request = one graph of two invocations, on two unit tasks (echo executors of different service times). */
const PAIR_APP = `
import { z } from 'zod';
import { CompositeTask, defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
class Pair extends CompositeTask<{ text: string }, string[]> {
  readonly first = new EchoTask({ serviceTimeMs: 0 });
  readonly second = new EchoTask({ serviceTimeMs: 1 });
  get name() { return 'pair'; }
  invoke(input: { text: string }): string[] { return [this.first.invoke(input).echo, this.second.invoke(input).echo]; }
}
const pair = new Pair();
export default defineApp({
  name: 'pair', tasks: { pair },
  request: z.object({ text: z.string() }), response: z.object({ echoes: z.array(z.string()) }),
  async serve(req) { return { echoes: await pair.call({ text: req.text }) }; },
});`;

let p: TestPlatform | undefined;
test.after.always(async () => {
  await p?.stop();
});

/** The value of the series `name{labels}` in Prometheus text (labels given in the order they are printed). */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('a two-task graph dispatched inside its app function is counted on the gateway\'s /metrics with the dispatcher\'s names', async (t) => {
  p = await startPlatform({ devices: 2 });
  t.is(p.dispatchMode, 'in-process');
  const appId = await p.register(PAIR_APP);
  const taskIds = (await p.store.getApp(appId))!.taskIds;
  t.is(taskIds.length, 2);
  for (let i = 0; i < 3; i++) {
    const res = await p.invoke('pair', { text: `hi ${i}` });
    t.is(res.status, 200);
    t.deepEqual(await res.json(), { echoes: [`hi ${i}`, `hi ${i}`] });
  }
  const text = await (await fetch(`${p.gatewayUrl}/metrics`)).text();
  t.is(sample(text, 'cornserve_dispatcher_requests_total', `app="${appId}",route="in-process"`), 3);
  for (const task of taskIds) {
    t.is(sample(text, 'cornserve_dispatcher_invocations_total', `task="${task}"`), 3, task);
    t.is(sample(text, 'cornserve_dispatcher_invocation_duration_seconds_count', `task="${task}",outcome="ok"`), 3, task);
  }
  t.is(sample(text, 'cornserve_dispatcher_request_duration_seconds_count', `app="${appId}",outcome="ok"`), 3);
});
