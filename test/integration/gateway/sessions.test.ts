/**
 * Interactive sessions (WS /session), POST/DELETE /tasks/usage and CornserveClient against a whole local platform
 * with echo executors. Each test uses its own echo configuration, so its task is deployed for it alone.
 */
import test from 'ava';
import WebSocket from 'ws';
import { CornserveClient } from '../../../functions/client/index.js';
import { EchoTask } from '../../../functions/tasks/index.js';
import { taskIdOf } from '../../../control/store/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';

const SESSION_TIMEOUT_MS = 3_000;
/** Clients heartbeat well within the (short, for the test) timeout. */
const fast = { heartbeatMs: 200 };
let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 4, sessionTimeoutMs: SESSION_TIMEOUT_MS });
});
test.after.always(async () => {
  await p?.stop();
});

const usageOf = async (task: EchoTask) => (await p.store.getTask(taskIdOf(task)))?.usage ?? 0;
const executorsOf = async (task: EchoTask) => (await p.store.listExecutors(taskIdOf(task))).length;
const gone = (task: EchoTask) => waitUntil(`${task.name} torn down`, async () => (await p.store.getTask(taskIdOf(task))) === undefined && (await executorsOf(task)) === 0, { timeoutMs: 30_000 });

/** A raw socket speaking the reference's frames: send one request, read its one reply. */
async function rawSession() {
  const sock = new WebSocket(`${p.gatewayUrl.replace(/^http/, 'ws')}/session`);
  await new Promise((resolve, reject) => sock.once('open', resolve).once('error', reject));
  const replies: Array<{ status: number; content: string }> = [];
  const waiting: Array<(r: { status: number; content: string }) => void> = [];
  sock.on('message', (d) => {
    const r = JSON.parse(d.toString()) as { status: number; content: string };
    const w = waiting.shift();
    if (w) w(r);
    else replies.push(r);
  });
  const closed = new Promise<number>((resolve) => sock.once('close', (code) => resolve(code)));
  return {
    sock,
    closed,
    send(frame: unknown): Promise<{ status: number; content: string }> {
      sock.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
      return new Promise((resolve) => (replies.length ? resolve(replies.shift()!) : waiting.push(resolve)));
    },
  };
}

/** The reference's UnitTaskList: `task` is the task's JSON encoded as a string. */
const referenceList = (task: EchoTask) => ({ _task_list: [{ class_name: 'EchoTask', task: JSON.stringify(task.toJSON()) }] });

test.serial('a client session declares a task, calls it through /tasks/invoke, and close releases it', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 1 });
  const client = await CornserveClient.connect(p.gatewayUrl, fast);
  try {
    await client.declare([echo]);
    t.is(await usageOf(echo), 1);
    t.deepEqual(await echo.call({ text: 'from a script' }), { echo: 'from a script' });
  } finally {
    await client.close();
  }
  await gone(echo);
  t.pass();
});

test.serial('the reference wire frames: heartbeat, declare_used and declare_not_used with a JSON-string task list', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 2 });
  const s = await rawSession();
  t.deepEqual(await s.send({ verb: 'heartbeat', task_list: null }), { status: 200, content: 'Session is alive' });
  t.deepEqual(await s.send({ verb: 'declare_used', task_list: referenceList(echo) }), { status: 200, content: 'Tasks declared used' });
  t.is(await usageOf(echo), 1);
  t.is(await executorsOf(echo), 1);
  t.deepEqual(await s.send({ verb: 'declare_not_used', task_list: referenceList(echo) }), { status: 200, content: 'Tasks declared not used' });
  await gone(echo);
  s.sock.close();
});

test.serial('bad frames get the reference statuses: 400 Invalid request, 404 Unknown method', async (t) => {
  const s = await rawSession();
  const notJson = await s.send('{nope');
  t.is(notJson.status, 400);
  t.true(notJson.content.startsWith('Invalid request'));
  const unknownVerb = await s.send({ verb: 'dance', task_list: null });
  t.is(unknownVerb.status, 404);
  t.true(unknownVerb.content.startsWith('Unknown method'));
  const unknownClass = await s.send({ verb: 'declare_used', task_list: { _task_list: [{ class_name: 'NoSuchTask', task: '{}' }] } });
  t.is(unknownClass.status, 400);
  t.regex(unknownClass.content, /_task_list\.0.*unknown unit task class NoSuchTask/);
  s.sock.close();
});

test.serial('a session that stops heartbeating is released after the timeout and its executors are torn down', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 3 });
  const s = await rawSession();
  t.is((await s.send({ verb: 'declare_used', task_list: referenceList(echo) })).status, 200);
  t.is(await executorsOf(echo), 1);
  await gone(echo); // no frame sent since: the session expires
  const late = await s.send({ verb: 'heartbeat', task_list: null });
  t.is(late.status, 404);
  t.regex(late.content, /unknown session .*no heartbeat for more than 3000 ms/);
  t.is(await s.closed, 4404);
});

test.serial('a session whose socket dies without declare_not_used is released', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 4 });
  const s = await rawSession();
  t.is((await s.send({ verb: 'declare_used', task_list: referenceList(echo) })).status, 200);
  s.sock.terminate();
  await gone(echo);
  t.pass();
});

test.serial('many sessions declaring the same task share one deployment and count usage', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 5 });
  const clients = await Promise.all([1, 2, 3].map(() => CornserveClient.connect(p.gatewayUrl, { ...fast, installDispatcher: false })));
  await Promise.all(clients.map((c) => c.declare([echo])));
  await clients[0]!.declare([echo]); // declaring again in the same session counts once
  t.is(await usageOf(echo), 3);
  t.is(await executorsOf(echo), 1);
  await clients[0]!.close();
  await waitUntil('usage 2', async () => (await usageOf(echo)) === 2, { timeoutMs: 10_000 });
  t.is(await executorsOf(echo), 1);
  await Promise.all(clients.slice(1).map((c) => c.close()));
  await gone(echo);
});

test.serial('POST and DELETE /tasks/usage take the reference task list', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 6 });
  const body = JSON.stringify(referenceList(echo));
  const headers = { 'content-type': 'application/json' };
  const post = await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'POST', headers, body });
  t.is(post.status, 200);
  t.deepEqual(await post.json(), { task_ids: [taskIdOf(echo)] });
  t.is(await usageOf(echo), 1);
  const del = await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'DELETE', headers, body });
  t.is(del.status, 200);
  await gone(echo);
});

test.serial('a task taken from /tasks/list is declared as listed through /tasks/usage and /session', async (t) => {
  const echo = new EchoTask({ serviceTimeMs: 7 });
  const headers = { 'content-type': 'application/json' };
  const declared = JSON.stringify(referenceList(echo));
  t.is((await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'POST', headers, body: declared })).status, 200);
  const listed = ((await (await fetch(`${p.gatewayUrl}/tasks/list`)).json()) as Array<{ task_id: string; class_name: string; task: unknown }>).find((x) => x.task_id === taskIdOf(echo))!;
  const fromListing = { _task_list: [{ class_name: listed.class_name, task: listed.task }] };
  const post = await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'POST', headers, body: JSON.stringify(fromListing) });
  t.deepEqual(await post.json(), { task_ids: [taskIdOf(echo)] });
  const s = await rawSession();
  t.deepEqual(await s.send({ verb: 'declare_used', task_list: fromListing }), { status: 200, content: 'Tasks declared used' });
  t.is(await usageOf(echo), 3);
  t.deepEqual(await s.send({ verb: 'declare_not_used', task_list: fromListing }), { status: 200, content: 'Tasks declared not used' });
  s.sock.close();
  for (const body of [JSON.stringify(fromListing), declared]) await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'DELETE', headers, body });
  await gone(echo);
});

test.serial('/tasks/usage with a bad task list is a 422 naming the entry', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/tasks/usage`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ _task_list: [{ class_name: 'EchoTask', task: '{"config": {"serviceTimeMs": -1}}' }] }) });
  t.is(res.status, 422);
  const body = (await res.json()) as { error: { message: string } };
  t.regex(body.error.message, /_task_list\.0/);
});
