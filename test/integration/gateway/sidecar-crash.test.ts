/**
 * The node sidecar dies under the platform `up` composes (the real sidecar process, SIGKILLed) while the
 * image-variation app (Eric → sidecar → Geri) is registered: requests in flight are answered at once, /health and the
 * task list say the sidecar is down and its tensor-moving executors are not routed to, and once the supervisor has
 * restarted it the executors reconnect and serve again.
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelsDir } from '../../helpers/models.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';

const APP = `${repoRoot}/functions/apps/image-variation.ts`;
/** Far past anything this test waits for: an answer before it is not the deadline's. */
const REQUEST_TIMEOUT_MS = 600_000;

let p: TestPlatform;
let image: string;

test.before(async () => {
  const models = await modelsDir();
  p = await startPlatform({
    devices: 2, sidecars: true, childEnv: { CORNSERVE_MODELS_DIR: models },
    // A restart delay long enough to look at the platform while the sidecar is down.
    sidecarSupervision: { healthCheck: { intervalMs: 200 }, restartBackoff: { initialMs: 3_000 } },
  });
  await p.register(APP);
  image = dataUrl('image/png', await makeImage(32, 32, { seed: 7 }));
});

test.after.always(async () => {
  await p?.stop();
});

const sidecarPid = () => p.sidecars!.pid('local');
const health = async () => (await (await fetch(new URL('/health', p.gatewayUrl))).json()) as { status: string; sidecars?: Record<string, string> };
const tasks = async () => (await (await fetch(new URL('/tasks/list', p.gatewayUrl))).json()) as Array<{ name: string; sidecar_down?: string[]; executors: Array<{ state: string }> }>;
const tensorTasks = async () => (await tasks()).filter((t) => /^(encoder|generator)-/.test(t.name));
const variation = () => p.invoke('image-variation', { image_url: image, width: 16, height: 16 }, { timeoutMs: REQUEST_TIMEOUT_MS });
const waitUp = () => waitUntil('the sidecar is restarted and the executors are routed to', async () =>
  (await health()).status === 'ok' && (await tensorTasks()).every((t) => t.executors.every((e) => e.state === 'ready')), { timeoutMs: 120_000, intervalMs: 100 });

test.serial('a request in flight when the node sidecar dies is answered 503 SIDECAR_DOWN, not at its deadline', async (t) => {
  const pid = sidecarPid()!;
  process.kill(pid, 'SIGSTOP'); // the request's transfer waits in the sidecar
  const reply = variation();
  await waitUntil('the request is in the graph', async () => (await p.store.listExecutors()).some((e) => e.outstanding > 0), { timeoutMs: 60_000 });
  process.kill(pid, 'SIGKILL');
  const res = await reply;
  t.is(res.status, 503);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'SIDECAR_DOWN');
  await waitUp();
});

test.serial('while the sidecar is down /health and the task list say so and its tensor-moving executors leave the routes', async (t) => {
  process.kill(sidecarPid()!, 'SIGKILL');
  await waitUntil('/health reports the sidecar down', async () => (await health()).status === 'degraded', { timeoutMs: 30_000, intervalMs: 20 });
  t.deepEqual((await health()).sidecars, { local: 'down' });
  const held = await tensorTasks();
  t.is(held.length, 2);
  for (const task of held) {
    t.deepEqual(task.sidecar_down, ['local'], task.name);
    t.true(task.executors.every((e) => e.state === 'failed'), task.name);
  }
  await waitUp();
});

test.serial('after the sidecar is restarted the executors reconnect and the app serves again', async (t) => {
  const before = sidecarPid()!;
  process.kill(before, 'SIGKILL');
  await waitUntil('the sidecar is down', async () => (await health()).status === 'degraded', { timeoutMs: 30_000, intervalMs: 20 });
  await waitUp();
  t.not(sidecarPid(), before);
  const res = await variation();
  t.is(res.status, 200, await res.clone().text());
  t.truthy(((await res.json()) as { image?: string }).image);
});
