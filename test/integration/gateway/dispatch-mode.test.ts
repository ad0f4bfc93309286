/**
 * `cornserve up` (with --redis, and plain: over the store link to its in-memory Store) runs each app function's task
 * graphs in its own process (no CloudEvent to the dispatcher service); `--dispatch cloudevent` forces the hop back. Observable through the dispatcher service's own request
 * counter (cornserve_dispatcher_requests_total, route="cloudevent"). Real Redis, real app-function and executor processes.
 */
import test from 'ava';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { ECHO_APP, startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { waitUntil } from '../../../lib/wait.js';

let redis: RedisServer;
let current: TestPlatform | undefined;
test.before(async () => {
  redis = await startRedis();
});
test.after.always(async () => {
  await current?.stop();
  await redis?.stop();
});

/** Task graphs the dispatcher service received as CloudEvents. */
async function cloudEventsReceived(p: TestPlatform): Promise<number> {
  const metric = await p.metrics.getSingleMetric('cornserve_dispatcher_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.route === 'cloudevent').reduce((n, v) => n + v.value, 0);
}

async function invokeBoth(t: import('ava').ExecutionContext, p: TestPlatform): Promise<void> {
  const res = await p.invoke('echo', { text: 'hi' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'hi' });
  const streamed = await p.invoke('echo', { text: 's', chunks: 2 });
  t.is(streamed.status, 200);
  t.deepEqual((await streamed.text()).trim().split('\n').map((l) => JSON.parse(l) as unknown), [0, 1].map((index) => ({ echo: 's', index })));
}

test.serial('up --redis runs task graphs inside the app function: the dispatcher service receives no CloudEvent', async (t) => {
  current = await startPlatform({ redisUrl: redis.url, redisPrefix: uniquePrefix('inproc'), devices: 2 });
  t.is(current.dispatchMode, 'in-process');
  await current.register(ECHO_APP);
  await invokeBoth(t, current);
  t.is(await cloudEventsReceived(current), 0);
  await current.stop();
  current = undefined;
});

test.serial('up --redis --dispatch cloudevent sends every task graph to the dispatcher service', async (t) => {
  current = await startPlatform({ redisUrl: redis.url, redisPrefix: uniquePrefix('events'), devices: 2, dispatch: 'cloudevent' });
  t.is(current.dispatchMode, 'cloudevent');
  await current.register(ECHO_APP);
  await invokeBoth(t, current);
  t.is(await cloudEventsReceived(current), 2);
  await current.stop();
  current = undefined;
});

test.serial('plain up runs task graphs inside the app function over its store link: no CloudEvent, leases back to zero', async (t) => {
  current = await startPlatform({ devices: 2 });
  t.is(current.dispatchMode, 'in-process');
  await current.register(ECHO_APP);
  await invokeBoth(t, current);
  t.is(await cloudEventsReceived(current), 0);
  // Every lease the app function took in the up process's store was released there.
  await waitUntil('the leases to be released', async () => (await current!.store.listExecutors()).every((r) => r.outstanding === 0), { timeoutMs: 10_000 });
  await current.stop();
  current = undefined;
});

test.serial('plain up --dispatch cloudevent sends every task graph to the dispatcher service', async (t) => {
  current = await startPlatform({ devices: 2, dispatch: 'cloudevent' });
  t.is(current.dispatchMode, 'cloudevent');
  await current.register(ECHO_APP);
  await invokeBoth(t, current);
  t.is(await cloudEventsReceived(current), 2);
  await current.stop();
  current = undefined;
});
