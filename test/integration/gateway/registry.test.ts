/**
 * User-defined unit tasks registered at run time (POST /tasks/register) on a whole local platform: the example
 * word-count executor (examples/registry, a plain Node HTTP server) registered, then called by an app and by a
 * script session; each fault a test of its own.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import test from 'ava';
import { CornserveClient } from '../../../functions/client/index.js';
import { getTaskClass, type UnitTask } from '../../../functions/sdk/index.js';
import { taskIdOf } from '../../../control/store/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { TEST_ADMIN_TOKEN, startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';

const run = promisify(execFile);
let p: TestPlatform;
let source: string;
let appSource: string;
test.before(async () => {
  source = await readFile(`${repoRoot}/examples/registry/word-count.ts`, 'utf8');
  appSource = await readFile(`${repoRoot}/examples/registry/word-count-app.ts`, 'utf8');
  p = await startPlatform({ devices: 2 });
});
test.after.always(async () => {
  await p?.stop();
});

const headers = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };
const register = (src: string) => fetch(`${p.gatewayUrl}/tasks/register`, { method: 'POST', headers, body: JSON.stringify({ source: src }) });
const unregister = (name: string) => fetch(`${p.gatewayUrl}/tasks/register/${name}`, { method: 'DELETE', headers });
type ErrorBody = { error: { code: string; message: string } };
const registeredNames = async () => (await p.store.listTaskDefinitions()).map((d) => d.name).sort();

/** A registry file with one change (e.g. another name) from the example. */
const variant = (from: string, to: string) => source.replace(from, to);

test.serial('a registered unit task is called by an app and by a script session, sharing one deployment', async (t) => {
  const res = await register(source);
  t.is(res.status, 200, await res.clone().text());
  t.like(await res.json(), { name: 'word-count', class_name: 'WordCountTask', created: true });

  const appId = await p.register(appSource);
  const out = await p.invoke('word-count', { text: 'the quick brown fox' });
  t.is(out.status, 200);
  t.deepEqual(await out.json(), { words: 4, longest: 'quick' });

  const cls = getTaskClass('WordCountTask')!;
  const task = new cls({ language: 'en' }) as UnitTask;
  const client = await CornserveClient.connect(p.gatewayUrl);
  try {
    await client.declare([task]);
    t.is((await p.store.getTask(taskIdOf(task)))?.usage, 2); // the app and the session share it
    t.is((await p.store.listExecutors(taskIdOf(task))).length, 1);
    t.deepEqual(await task.call({ text: 'a script calls it too' }), { words: 5, longest: 'script' });
  } finally {
    await client.close();
  }

  const inUse = await unregister('word-count');
  t.is(inUse.status, 409);
  t.is(((await inUse.json()) as ErrorBody).error.code, 'TASK_DEFINITION_IN_USE');

  t.is((await p.admin(`/app/unregister/${appId}`)).status, 200);
  await waitUntil('word-count torn down', async () => (await p.store.getTask(taskIdOf(task))) === undefined, { timeoutMs: 30_000 });
  t.is((await unregister('word-count')).status, 200);
  t.deepEqual(await registeredNames(), []);
  t.is(getTaskClass('WordCountTask'), undefined);
});

test.serial('registering an equal definition again is idempotent; a different one under the same name is 409', async (t) => {
  const src = variant("name: 'word-count'", "name: 'word-count-twice'").replace("className: 'WordCountTask'", "className: 'WordCountTwiceTask'");
  t.is((await register(src)).status, 200);
  const again = await register(src);
  t.is(again.status, 200);
  t.like(await again.json(), { created: false });
  const different = await register(src.replace("path: '/count'", "path: '/other'"));
  t.is(different.status, 409);
  t.is(((await different.json()) as ErrorBody).error.code, 'TASK_DEFINITION_CONFLICT');
  t.is((await unregister('word-count-twice')).status, 200);
});

test.serial('a registry source that fails to compile is a 422 naming the error, nothing registered', async (t) => {
  const res = await register(variant('export default defineUnitTask({', 'export default defineUnitTask({{'));
  t.is(res.status, 422);
  const body = (await res.json()) as ErrorBody;
  t.is(body.error.code, 'TASK_REGISTRATION_FAILED');
  t.regex(body.error.message, /syntax error/);
  t.deepEqual(await registeredNames(), []);
});

test.serial('a registry source that exports no unit task is a 422, nothing registered', async (t) => {
  const res = await register("export const x = 1;\nexport default { name: 'nothing' };\n");
  t.is(res.status, 422);
  t.regex(((await res.json()) as ErrorBody).error.message, /no unit task is exported/);
  t.deepEqual(await registeredNames(), []);
});

test.serial('a registry source naming an unknown descriptor is a 422, nothing registered', async (t) => {
  const res = await register(variant("kind: 'http-json'", "kind: 'grpc-magic'"));
  t.is(res.status, 422);
  t.regex(((await res.json()) as ErrorBody).error.message, /descriptor\.kind: unknown descriptor "grpc-magic"/);
  t.deepEqual(await registeredNames(), []);
});

test.serial('registering needs the admin token', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/tasks/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source }) });
  t.is(res.status, 401);
  t.deepEqual(await registeredNames(), []);
});

test.serial('removing an unknown registered task is a 404', async (t) => {
  const res = await unregister('never-registered');
  t.is(res.status, 404);
  t.is(((await res.json()) as ErrorBody).error.code, 'TASK_DEFINITION_NOT_FOUND');
});

test.serial('cornserve tasks register FILE.ts registers the unit task and tasks unregister removes it', async (t) => {
  const env = { ...process.env, CORNSERVE_GATEWAY_URL: p.gatewayUrl, CORNSERVE_ADMIN_TOKEN: TEST_ADMIN_TOKEN };
  const cli = (args: string[]) => run(process.execPath, ['--import', 'tsx', `${repoRoot}/control/cli/main.ts`, ...args], { env, cwd: repoRoot });
  const reg = await cli(['tasks', 'register', `${repoRoot}/examples/registry/word-count.ts`]);
  t.regex(reg.stdout, /registered unit task word-count \(WordCountTask\)/);
  t.deepEqual(await registeredNames(), ['word-count']);
  const again = await cli(['tasks', 'register', `${repoRoot}/examples/registry/word-count.ts`]);
  t.regex(again.stdout, /already registered with this definition/);
  const un = await cli(['tasks', 'unregister', 'word-count']);
  t.regex(un.stdout, /removed unit task word-count/);
  t.deepEqual(await registeredNames(), []);
});
