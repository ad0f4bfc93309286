/**
 * Runaway user code: an app function whose event loop is blocked (an endless loop in serve()) is killed and
 * restarted by the gateway's watcher; the request it held gets APP_FUNCTION_BLOCKED naming the app; other apps
 * keep answering meanwhile. An endless loop at import fails the registration's source check instead.
 */
import test from 'ava';
import { checkAppSource } from '../../../control/gateway/source-check.js';
import { probe } from '../../../lib/unix-url.js';
import { waitUntil } from '../../../lib/wait.js';
import { echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const LOOPING_APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: 0 });
export default defineApp({
  name: 'looper', tasks: { echo },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) {
    if (req.text === 'loop') for (;;) {} // never yields: the process's event loop is stuck
    return echo.call({ text: req.text });
  },
});`;

let p: TestPlatform;
test.before(async () => {
  // 2 s: far below the request's deadline, so the watcher (not the deadline) ends the looping request.
  p = await startPlatform({ devices: 1, blockedLimitMs: 2_000 });
  await p.register(LOOPING_APP);
  await p.register(echoAppSource('bystander'));
});
test.after.always(async () => {
  await p?.stop();
});

test('an app function blocked in an endless loop is killed and restarted; its request gets APP_FUNCTION_BLOCKED naming the app, and other apps answer meanwhile', async (t) => {
  t.timeout(180_000);
  const appId = p.apps.resolve('looper').appId;
  const before = p.platform.processes().find((x) => x.kind === 'app-function' && x.id === appId)!;
  const looping = p.invoke('looper', { text: 'loop' }, { timeoutMs: 120_000 });

  // While the looper is stuck (before the watcher's verdict), another app answers.
  const stuckOrRestarted = async () => p.functions.state(appId) !== 'ready' || (await probeFails(before));
  await waitUntil('the looper stopped answering its health probe', stuckOrRestarted, { timeoutMs: 60_000 });
  const other = await p.invoke('bystander', { text: 'still here' });
  t.is(other.status, 200);
  t.deepEqual(await other.json(), { echo: 'still here' });

  const res = await looping;
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.is(res.status, 502, JSON.stringify(body));
  t.is(body.error.code, 'APP_FUNCTION_BLOCKED');
  t.regex(body.error.message, /app function of looper .*event loop was blocked/);

  await waitUntil('the looper restarted', () => p.functions.state(appId) === 'ready', { timeoutMs: 90_000 });
  const after = p.platform.processes().find((x) => x.kind === 'app-function' && x.id === appId)!;
  t.not(after.pid, before.pid, 'a new process');
  const next = await p.invoke('looper', { text: 'alive' });
  t.is(next.status, 200);
  t.deepEqual(await next.json(), { echo: 'alive' });
});

test('an app whose module loops forever at import fails its source check with a message saying so', async (t) => {
  const result = await checkAppSource(`${LOOPING_APP}\nfor (;;) {}\n`, undefined, { timeoutMs: 5_000 });
  t.false(result.ok);
  t.regex(result.ok ? '' : result.problems.join('; '), /longer than 5000 ms.*block at top level/);
});

/** True once the function no longer answers GET /health within a second (its loop is stuck). */
async function probeFails(info: { url: string }): Promise<boolean> {
  try {
    await probe(`${info.url}/health`, 1_000);
    return false;
  } catch {
    return true;
  }
}
