/**
 * The dispatcher as its own process (control/dispatcher/main.ts) over a REAL Redis Store: routes written by
 * another process (this test, standing in for a task manager) are read from Redis.
 */
import test from 'ava';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { CloudEvent, HTTP } from 'cloudevents';
import { TaskGraph, readDispatchResponse, TASKGRAPH_EVENT_TYPE } from '../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask } from '../../../functions/tasks/echo.js';
import { RedisStore } from '../../../control/store/redis.js';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { deployTask, outstandingByExecutor, startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = 'control/dispatcher/main.ts';

let redis: RedisServer;
let store: RedisStore;
let executor: EchoExecutor;
let dispatcher: ChildProcess;
let url: string;

test.before(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('dispatcher');
  store = new RedisStore({ url: redis.url, prefix });
  await store.ready();
  executor = await startEchoExecutor();
  await deployTask(store, new EchoTask({ serviceTimeMs: 0 }), [{ url: executor.url, executorId: 'echo-redis' }]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  dispatcher = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', String(port), '--redis', redis.url, '--redis-prefix', prefix], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  process.once('exit', () => dispatcher.kill('SIGKILL'));
  await waitUntil('the dispatcher process to answer /health', async () => {
    try {
      return (await fetch(new URL('/health', url))).ok;
    } catch {
      return false;
    }
  }, { timeoutMs: 60_000 }); // node + tsx start slowly on a loaded machine (like the roles' 60 s+ bounds)
});

test.after.always(async () => {
  if (dispatcher && dispatcher.exitCode === null) {
    dispatcher.kill('SIGTERM');
    await once(dispatcher, 'exit');
  }
  await executor?.stop();
  await store?.close();
  await redis?.stop();
});

const post = (graph: TaskGraph) => {
  const msg = HTTP.binary(
    new CloudEvent({ type: TASKGRAPH_EVENT_TYPE, source: '/apps/app-redis', datacontenttype: 'application/json', data: graph.toJSON(), deadline: Date.now() + 60_000 }),
  );
  return fetch(url, { method: 'POST', headers: msg.headers as Record<string, string>, body: msg.body as string });
};

test.serial('the dispatcher process routes a graph with routes read from the Redis store', async (t) => {
  const graph = new TaskGraph([{ task: new EchoTask({ serviceTimeMs: 0 }), input: { text: 'via redis' }, output: { echo: '' } }]);
  t.deepEqual(await readDispatchResponse(await post(graph)), { outputs: [{ echo: 'via redis' }] });
  t.deepEqual(await outstandingByExecutor(store), { 'echo-redis': 0 });
});

test.serial('the dispatcher process streams a graph and releases the Redis-stored lease at the end', async (t) => {
  const task = new EchoStreamTask({ serviceTimeMs: 0 });
  const graph = new TaskGraph([{ task, input: { text: 's', chunks: 2 }, output: task.makeRecordOutput() }]);
  const result = await readDispatchResponse(await post(graph));
  const lines: string[] = [];
  for await (const line of result.stream!) lines.push(line);
  t.is(lines.length, 2);
  t.deepEqual(await outstandingByExecutor(store), { 'echo-redis': 0 });
});

test.serial('SIGTERM stops the dispatcher process cleanly', async (t) => {
  dispatcher.kill('SIGTERM');
  const [code] = (await once(dispatcher, 'exit')) as [number | null];
  t.is(code, 0);
});

test('--help describes the options and exits 0', (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, '--help'], { cwd: REPO, encoding: 'utf8' });
  t.is(r.status, 0);
  for (const flag of ['--port', '--redis', '--host']) t.true(r.stdout.includes(flag), flag);
});
