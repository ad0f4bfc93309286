import { readFile } from 'node:fs/promises';
import test from 'ava';
import { ECHO_APP, TEST_ADMIN_TOKEN, echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 4 });
});
test.after.always(async () => {
  await p?.stop();
});

/** Nothing of a failed registration remains: no app, no unit task, no process. */
async function nothingDeployed(t: import('ava').ExecutionContext, before: { apps: number; tasks: number; processes: number }) {
  t.is((await p.store.listApps()).length, before.apps);
  t.is((await p.store.listTasks()).length, before.tasks);
  t.is(p.platform.processes().length, before.processes);
}
const snapshot = async () => ({ apps: (await p.store.listApps()).length, tasks: (await p.store.listTasks()).length, processes: p.platform.processes().length });

const app = echoAppSource;

/** POST /app/register as a script would send it: the status, the content type and the body text. */
async function registerReply(source: string, opts: { name?: string; alias?: string } = {}) {
  const res = await fetch(`${p.gatewayUrl}/app/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source, ...opts }),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', text, error: (res.ok ? {} : JSON.parse(text).error) as { code?: string; message?: string } };
}

test.serial('a syntax error is a 400 before any event, naming the line, and nothing is deployed', async (t) => {
  const before = await snapshot();
  const r = await registerReply('export default defineApp({\n  name: "x",,\n});\n');
  t.is(r.status, 400);
  t.regex(r.type, /application\/json/);
  t.is(r.error.code, 'REGISTRATION_FAILED');
  t.regex(r.error.message ?? '', /syntax error at app\.ts:2:\d+/);
  await nothingDeployed(t, before);
});

test.serial('an app without serve is a 400 saying so, and nothing is deployed', async (t) => {
  const before = await snapshot();
  const src = `import { z } from 'zod'; import { defineApp } from 'cornserve/sdk';
export default defineApp({ name: 'noserve', tasks: {}, request: z.object({}), response: z.object({}) } as any);`;
  const r = await registerReply(src);
  t.is(r.status, 400);
  t.regex(r.error.message ?? '', /serve must be a function/);
  await nothingDeployed(t, before);
});

test.serial('a request that is not a schema is a 400 saying so, and nothing is deployed', async (t) => {
  const before = await snapshot();
  const src = app('norequest').replace("request: z.object({ text: z.string() })", "request: { text: 'string' } as any");
  const r = await registerReply(src);
  t.is(r.status, 400);
  t.regex(r.error.message ?? '', /request must be a zod schema/);
  await nothingDeployed(t, before);
});

test.serial('a bad name is a 400 before any event', async (t) => {
  const before = await snapshot();
  const r = await registerReply(app('fine'), { name: 'Not A Name!' });
  t.is(r.status, 400);
  t.regex(r.error.message ?? '', /app name "Not A Name!" must match/);
  await nothingDeployed(t, before);
});

test.serial('registration streams initial, one progress per unit task, then final; the app is listed ready', async (t) => {
  const events = await p.registerEvents(ECHO_APP);
  t.deepEqual(events.map((e) => e.type), ['initial', 'progress', 'final']);
  const initial = events[0] as { app_id: string; task_names: string[] };
  t.regex(initial.app_id, /^app-[0-9a-f]{32}$/);
  t.deepEqual(initial.task_names, ['echo-0ms']);
  t.like(events[1], { type: 'progress', task: 'echo-0ms' });
  t.like(events[2], { type: 'final', message: 'Successfully deployed 1 unit task' });
  const list = (await (await fetch(`${p.gatewayUrl}/app/list`)).json()) as Record<string, string>;
  t.is(list[initial.app_id], 'ready');
});

test.serial('a second app with a taken name is a 409 before any event, and nothing more is deployed', async (t) => {
  const before = await snapshot();
  const r = await registerReply(await readFile(ECHO_APP, 'utf8'));
  t.is(r.status, 409);
  t.is(r.error.code, 'REGISTRATION_FAILED');
  t.regex(r.error.message ?? '', /"echo" is already used/);
  await nothingDeployed(t, before);
});

test.serial('two apps sharing a task: unregistering one leaves the other working', async (t) => {
  const a = await p.register(app('share-a', 7));
  const b = await p.register(app('share-b', 7));
  const tasks = (await p.store.listTasks()).filter((x) => (x.task as { config: { serviceTimeMs: number } }).config.serviceTimeMs === 7);
  t.is(tasks.length, 1, 'equivalent tasks are deployed once');
  t.is(tasks[0]!.usage, 2);
  const un = await p.admin(`/app/unregister/${a}`);
  t.is(un.status, 200);
  const res = await p.invoke(b, { text: 'still here' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'still here' });
  t.is((await p.store.getTask(tasks[0]!.taskId))?.usage, 1);
  t.is((await p.invoke(a, { text: 'gone' })).status, 404);
});

test.serial('unregistering the last user of a task tears it down', async (t) => {
  const id = await p.register(app('alone', 11));
  const taskId = (await p.store.getApp(id))!.taskIds[0]!;
  t.is((await p.admin(`/app/unregister/alone`)).status, 200);
  t.is(await p.store.getTask(taskId), undefined);
  t.deepEqual(await p.store.listExecutors(taskId), []);
});

test.serial('an app invoked while its registration is still deploying is a 409', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/app/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source: app('early', 13) }),
  });
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('"initial"')) seen += new TextDecoder().decode((await reader.read()).value);
  const early = await p.invoke('early', { text: 'too soon' });
  t.is(early.status, 409);
  t.is(((await early.json()) as { error: { code: string } }).error.code, 'APP_NOT_READY');
  while (!(await reader.read()).done); // let the registration finish
  t.is((await p.invoke('early', { text: 'now' })).status, 200);
});

test.serial('a registration whose tasks cannot all get devices is rolled back and says why', async (t) => {
  const free = 4 - (await p.store.listTasks()).reduce((n, x) => n + x.devices.length, 0);
  const before = await snapshot();
  const tasks = Array.from({ length: free + 1 }, (_, i) => `t${i}: new EchoTask({ serviceTimeMs: ${100 + i} })`);
  const src = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
export default defineApp({
  name: 'greedy', tasks: { ${tasks.join(', ')} },
  request: z.object({}), response: z.object({}),
  async serve() { return {}; },
});`;
  const events = await p.registerEvents(src);
  const last = events.at(-1) as { type: string; message: string };
  t.is(last.type, 'error');
  t.regex(last.message, /rolled back/);
  t.regex(last.message, /device/i);
  await nothingDeployed(t, before);
});

test('unregistering an unknown app is a 404', async (t) => {
  const res = await p.admin('/app/unregister/app-nope');
  t.is(res.status, 404);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'APP_NOT_FOUND');
});

for (const [what, headers] of [
  ['a missing', {}],
  ['a wrong', { authorization: 'Bearer not-the-token' }],
] as const) {
  test(`${what} admin token is a 401 on register, unregister and scale`, async (t) => {
    const send = (path: string, body: unknown) =>
      fetch(`${p.gatewayUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    for (const [path, body] of [
      ['/app/register', { source: 'x' }],
      ['/app/unregister/echo', {}],
      ['/task/scale', { task_id: 'x', num_devices: 1 }],
    ] as const) {
      const res = await send(path, body);
      t.is(res.status, 401, path);
      t.is(((await res.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    }
  });
}
