/**
 * `up --redis` through a store outage and a store loss: a real redis-server stopped and started again under a
 * platform of real app-function and executor processes (the in-process composition of `cornserve up`).
 */
import test, { type ExecutionContext } from 'ava';
import { uniquePrefix } from '../../helpers/ids.js';
import { ECHO_APP, startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { waitUntil } from '../../../lib/wait.js';

interface ErrorReply {
  error: { code: string; message: string };
}

/** A platform on its own Redis with the echo app registered; both stopped at the end of the test. */
async function echoOnRedis(t: ExecutionContext, o: { persistent?: boolean } = {}): Promise<{ p: TestPlatform; redis: RedisServer }> {
  const redis = await startRedis(o);
  t.teardown(() => redis.stop());
  const p = await startPlatform({ redisUrl: redis.url, redisPrefix: uniquePrefix('outage'), devices: 2 });
  t.teardown(() => p.stop());
  await p.register(ECHO_APP);
  t.is((await p.invoke('echo', { text: 'before' })).status, 200);
  return { p, redis };
}

const pidsOf = (p: TestPlatform, kind: 'executor' | 'app-function') => p.platform.processes().filter((x) => x.kind === kind).map((x) => x.pid).sort();

const health = async (p: TestPlatform) => {
  const res = await fetch(`${p.gatewayUrl}/health`);
  return { status: res.status, body: (await res.json()) as { status: string; store?: { state: string } } };
};

test.serial('while Redis is down, an invocation answers 503 STORE_UNAVAILABLE in the platform\'s words, with Retry-After', async (t) => {
  const { p, redis } = await echoOnRedis(t);
  await redis.stop();
  const res = await p.invoke('echo', { text: 'during' });
  t.is(res.status, 503);
  t.truthy(res.headers.get('retry-after'));
  const body = (await res.json()) as ErrorReply;
  t.is(body.error.code, 'STORE_UNAVAILABLE');
  t.regex(body.error.message, /the store cannot be reached/);
  t.notRegex(body.error.message, /maxRetriesPerRequest|max retries/i);
});

test.serial('while Redis is down, the routes that read the store answer 503 STORE_UNAVAILABLE with Retry-After, not 500', async (t) => {
  const { p, redis } = await echoOnRedis(t);
  await redis.stop();
  for (const path of ['/app/list', '/app/list?details=1', '/tasks/list']) {
    const res = await fetch(`${p.gatewayUrl}${path}`);
    t.is(res.status, 503, path);
    t.truthy(res.headers.get('retry-after'), path);
    t.is(((await res.json()) as ErrorReply).error.code, 'STORE_UNAVAILABLE', path);
  }
});

test.serial('an outage that keeps the data: /health reports the store down, then everything resumes with nothing deployed twice', async (t) => {
  const { p, redis } = await echoOnRedis(t, { persistent: true });
  const executors = pidsOf(p, 'executor');
  const functions = pidsOf(p, 'app-function');
  t.deepEqual((await health(p)).body.store?.state, 'ok');
  await redis.stop();
  await waitUntil('/health reports the store unavailable', async () => (await health(p)).status === 503, { timeoutMs: 30_000 });
  t.like((await health(p)).body, { status: 'degraded', store: { state: 'unavailable' } });
  await redis.restart();
  await waitUntil('/health reports the store back', async () => (await health(p)).status === 200, { timeoutMs: 30_000 });
  t.is((await p.invoke('echo', { text: 'after' })).status, 200);
  t.deepEqual(pidsOf(p, 'executor'), executors);
  t.deepEqual(pidsOf(p, 'app-function'), functions);
});

test.serial('Redis back empty: what the store no longer records is stopped, and the app registers and serves again', async (t) => {
  const { p, redis } = await echoOnRedis(t);
  const before = [...pidsOf(p, 'executor'), ...pidsOf(p, 'app-function')];
  await redis.restart(); // no persistence: an empty Redis on the same port
  await waitUntil('the old app function and executors stopped', () => p.platform.processes().length === 0, { timeoutMs: 60_000 });
  for (const pid of before) t.throws(() => process.kill(pid, 0), undefined, `process ${pid} still runs`);
  t.deepEqual(await (await fetch(`${p.gatewayUrl}/app/list`)).json(), {});
  t.is(((await (await p.invoke('echo', { text: 'gone' })).json()) as ErrorReply).error.code, 'APP_NOT_FOUND');
  await p.register(ECHO_APP);
  const res = await p.invoke('echo', { text: 'again' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'again' });
});

test.serial('while Redis is down, the gateway\'s /metrics answers 200 with its own series and cornserve_store_reachable 0', async (t) => {
  const { p, redis } = await echoOnRedis(t);
  t.regex(await (await fetch(`${p.gatewayUrl}/metrics`)).text(), /^cornserve_store_reachable 1$/m);
  await redis.stop();
  const res = await fetch(`${p.gatewayUrl}/metrics`);
  t.is(res.status, 200);
  const text = await res.text();
  t.regex(text, /^cornserve_store_reachable 0$/m);
  t.regex(text, /^cornserve_gateway_requests_total\{app="echo",status="200"\} 1$/m);
});
