/**
 * Executors whose engine dies while their router lives on (kill -9 of the engine child): the task manager's health
 * checks see the router's 503, take the route out at once (dispatchers stop routing to it), restart the executor
 * through the local platform and put it back once it is healthy. Real Eric and Geri processes (router + engine +
 * worker), a real resource manager, the dispatcher's Router over the same Store.
 */
import test from 'ava';
import { Router } from '../../../control/dispatcher/routing.js';
import type { ExecutorRoute } from '../../../lib/store.js';
import { TaskGraph } from '../../../functions/sdk/index.js';
import { EncoderTask } from '../../../functions/tasks/encoder.js';
import { ImageGeneratorTask } from '../../../functions/tasks/generator.js';
import { waitUntil } from '../../../lib/wait.js';
import { TINY_A, dataUrl } from '../../helpers/eric.js';
import { IMAGE_GEN_ID, dataId, embeddings, sendEmbeddings } from '../../helpers/geri.js';
import { makeImage } from '../../helpers/media.js';
import { modelsDir } from '../../helpers/models.js';
import { isAlive } from '../../helpers/repo.js';
import { startResourceManager } from '../../helpers/resources.js';
import { startSidecars } from '../../helpers/sidecar.js';
import { recordRouteStates } from '../../helpers/store-records.js';

/** Health probes every 200 ms; restarts after 50 ms unless a test holds them back. */
const rmOptions = (initialMs = 50) => ({ taskManager: { drainPollMs: 20, healthCheck: { intervalMs: 200 }, restartBackoff: { initialMs, maxMs: Math.max(initialMs, 10_000) } } });


const enginePid = async (route: ExecutorRoute): Promise<number> => ((await (await fetch(`${route.url}/info`)).json()) as { engine: { pid: number } }).engine.pid;

async function embed(url: string, id: string): Promise<number> {
  const image = dataUrl('image/png', await makeImage(56, 56));
  const res = await fetch(`${url}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ data: [{ id, modality: 'image', model_id: TINY_A, url: image }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

const encoder = () => new EncoderTask({ modality: 'image', modelIds: [TINY_A] });

test.serial('an Eric whose engine is killed leaves the routes, is restarted, and serves again', async (t) => {
  t.timeout(180_000);
  const { rm, store } = startResourceManager(t, { rm: { ...rmOptions(), executorEnv: { CORNSERVE_MODELS_DIR: await modelsDir() } } });
  const [taskId] = await rm.deploy([encoder()]);
  const [route] = await store.listExecutors(taskId);
  t.is(await embed(route!.url, 'before'), 200);
  const states = recordRouteStates(store, route!.executorId);
  const oldEngine = await enginePid(route!);

  process.kill(oldEngine, 'SIGKILL');

  await waitUntil('the route left the ready ones', () => states[0], { timeoutMs: 30_000 });
  t.is(states[0], 'failed');
  await waitUntil('ready again', () => states.includes('ready'), { timeoutMs: 120_000 });
  const after = (await store.getExecutor(route!.executorId))!;
  t.like(after, { state: 'ready', url: route!.url, devices: route!.devices });
  const newEngine = await enginePid(after);
  t.not(newEngine, oldEngine);
  t.true(isAlive(newEngine));
  t.is(await embed(after.url, 'after'), 200);
});

test.serial('with two Erics, no request is routed to the one whose engine died once that is detected', async (t) => {
  t.timeout(180_000);
  // Restarts held back for minutes: the dead executor stays out while the requests below are routed.
  const { rm, store } = startResourceManager(t, { rm: { ...rmOptions(600_000), executorEnv: { CORNSERVE_MODELS_DIR: await modelsDir() } } });
  const task = encoder();
  const [taskId] = await rm.deploy([task]);
  await rm.scale(taskId!, 1);
  const [dead, alive] = await store.listExecutors(taskId);
  t.truthy(dead && alive);

  process.kill(await enginePid(dead!), 'SIGKILL');
  await waitUntil('the dead executor is out of the routes', async () => (await store.getExecutor(dead!.executorId))?.state !== 'ready', { timeoutMs: 30_000 });

  const router = new Router(store);
  const routedTo: string[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const [lease] = await router.routeGraph(new TaskGraph([{ task, input: {}, output: {} }]));
    routedTo.push(lease!.route.executorId);
    statuses.push(await embed(lease!.route.url, `req-${i}`));
    await lease!.release();
  }
  t.deepEqual([...new Set(routedTo)], [alive!.executorId]);
  t.deepEqual([...new Set(statuses)], [200]);
});

test.serial('a Geri whose engine is killed leaves the routes, is restarted, and generates again', async (t) => {
  t.timeout(180_000);
  const sc = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => sc.stop());
  const { rm, store, platform } = startResourceManager(t, { rm: { ...rmOptions(), executorEnv: { CORNSERVE_MODELS_DIR: await modelsDir() } } });
  platform.setSidecarUrl('local', `unix:${sc.nodes[0]!.socketPath}`);
  const [taskId] = await rm.deploy([new ImageGeneratorTask({ modelId: IMAGE_GEN_ID })]);
  const [route] = await store.listExecutors(taskId);
  const producer = await sc.client(route!.sidecarRanks[0] === 0 ? 1 : 0);
  const generate = async (url: string) => {
    const id = dataId();
    await sendEmbeddings(producer, id, embeddings(4), [route!.sidecarRanks]);
    const res = await fetch(`${url}/image/generate`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ embedding_data_id: id, height: 32, width: 32 }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  t.is(await generate(route!.url), 200);
  const states = recordRouteStates(store, route!.executorId);
  const oldEngine = ((await (await fetch(`${route!.url}/info`)).json()) as { enginePid: number }).enginePid;

  process.kill(oldEngine, 'SIGKILL');

  await waitUntil('the route left the ready ones', () => states[0], { timeoutMs: 30_000 });
  t.is(states[0], 'failed');
  await waitUntil('ready again', () => states.includes('ready'), { timeoutMs: 120_000 });
  const after = (await store.getExecutor(route!.executorId))!;
  const newEngine = ((await (await fetch(`${after.url}/info`)).json()) as { enginePid: number }).enginePid;
  t.not(newEngine, oldEngine);
  t.is(await generate(after.url), 200);
});
