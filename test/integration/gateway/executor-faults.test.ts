import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const app = echoAppSource;

let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 3 });
});
test.after.always(async () => {
  await p?.stop();
});

const readyExecutors = async (taskId: string) => (await p.store.listExecutors(taskId)).filter((e) => e.state === 'ready');

test.serial('an executor killed mid-request fails that request within its deadline, is restarted, and the next request succeeds', async (t) => {
  const appId = await p.register(app('victim', 2000));
  const taskId = (await p.store.getApp(appId))!.taskIds[0]!;
  const [route] = await readyExecutors(taskId);
  const proc = p.platform.processes().find((x) => x.kind === 'executor' && x.id === route!.executorId)!;

  const deadline = Date.now() + 30_000;
  const inFlight = p.invoke('victim', { text: 'doomed' }, { timeoutMs: 30_000 });
  // Gateway -> app function -> dispatcher can take seconds on a loaded machine (5 s was a guess about speed).
  await waitUntil('the request reached the executor', async () => (await p.store.getExecutor(route!.executorId))?.outstanding === 1, { timeoutMs: 25_000 });
  process.kill(proc.pid, 'SIGKILL');
  const res = await inFlight;
  t.true(Date.now() < deadline, 'failed before its deadline');
  t.true(res.status >= 500 && res.status < 600);
  const text = await res.text();
  const body = JSON.parse(text) as { error: { code: string; message: string; details?: { task?: string } } };
  t.not(body.error.code, 'DEADLINE_EXCEEDED');
  t.is(body.error.details?.task, 'echo-2000ms', 'the body names the task that failed');
  t.true(body.error.message.length > 0);
  for (const internal of [route!.executorId, '127.0.0.1', 'localhost', '.sock', route!.url]) t.false(text.includes(internal), `${internal} in ${text}`);

  await waitUntil('the executor is back', async () => {
    const ready = await readyExecutors(taskId);
    return ready.length === 1 && p.platform.processes().some((x) => x.kind === 'executor' && x.id === route!.executorId && x.pid !== proc.pid);
  }, { timeoutMs: 60_000 });
  const next = await p.invoke('victim', { text: 'again' });
  t.is(next.status, 200);
  t.deepEqual(await next.json(), { echo: 'again' });
});

test.serial('a scale-down during load loses no request', async (t) => {
  const appId = await p.register(app('loaded', 150));
  const taskId = (await p.store.getApp(appId))!.taskIds[0]!;
  const up = await p.admin('/task/scale', { task_id: taskId, num_devices: 1 });
  t.is(up.status, 200);
  await waitUntil('two executors ready', async () => (await readyExecutors(taskId)).length === 2, { timeoutMs: 60_000 });

  let stop = false;
  const statuses: number[] = [];
  const worker = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const res = await p.invoke('loaded', { text: `${w}-${i}` });
      statuses.push(res.status);
      const body = (await res.json()) as { echo?: string };
      if (res.status === 200 && body.echo !== `${w}-${i}`) statuses.push(-1);
    }
  };
  const workers = [0, 1, 2, 3, 4, 5].map(worker);
  await waitUntil('load is flowing', () => statuses.length >= 12, { timeoutMs: 20_000 });
  const down = await p.admin('/task/scale', { task_id: taskId, num_devices: -1 });
  t.is(down.status, 200);
  await waitUntil('one executor left', async () => (await p.store.listExecutors(taskId)).length === 1, { timeoutMs: 30_000 });
  const afterScale = statuses.length;
  await waitUntil('load continues after the scale-down', () => statuses.length >= afterScale + 12, { timeoutMs: 20_000 });
  stop = true;
  await Promise.all(workers);
  t.true(statuses.length > 24);
  t.deepEqual(statuses.filter((s) => s !== 200), [], 'every request answered 200 with its own echo');
});

test.serial('a task scaled to zero answers 503 NO_EXECUTOR with Retry-After through the gateway, and serves again once scaled up', async (t) => {
  const appId = await p.register(app('dormant', 0));
  const taskId = (await p.store.getApp(appId))!.taskIds[0]!;
  const down = await p.admin('/task/scale', { task_id: taskId, num_devices: -1 });
  t.is(down.status, 200);
  t.like(await down.json(), { state: 'ready', executors: [], devices: [] });

  const res = await p.invoke('dormant', { text: 'anyone?' });
  t.is(res.status, 503);
  t.like(await res.json(), { error: { code: 'NO_EXECUTOR' } });
  t.is(res.headers.get('retry-after'), '5');

  const up = await p.admin('/task/scale', { task_id: taskId, num_devices: 1 });
  t.is(up.status, 200);
  const next = await p.invoke('dormant', { text: 'back' });
  t.is(next.status, 200);
  t.deepEqual(await next.json(), { echo: 'back' });
});
