/**
 * `cornserve resource-manager --platform kubernetes` as a real process against the fake API server (and a
 * real Redis): a task deploy through its HTTP API becomes a Deployment pinned to a GPU node, an app function
 * a Knative Service with its source ConfigMap. No executor can answer at a cluster address here, so the
 * task deploy ends in a health timeout and is rolled back; that is asserted too.
 */
import test from 'ava';
import { ResourceManagerClient } from '../../../control/resources/client.js';
import { EchoTask } from '../../../functions/tasks/echo.js';
import { waitUntil } from '../../../lib/wait.js';
import { executorObjectName, labelValue } from '../../../control/platform/kubernetes/names.js';
import { newTaskRecord } from '../../../control/resources/task-records.js';
import { createStore } from '../../../control/store/index.js';
import { definitionDigest } from '../../../control/registry/task-registry.js';
import type { TaskDefinitionJSON } from '../../../functions/sdk/index.js';
import { taskIdOf } from '../../../control/store/task-id.js';
import type { ExecutorRoute } from '../../../lib/store.js';
import { startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';
import { echo } from '../../helpers/local-platform.js';
import { startFakeKubeApi, type FakeKubeApi } from '../../helpers/fake-kube-api.js';
import { validateManifest } from '../../helpers/kube-models.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { CLI, startRole, writeKubeconfig, type RoleProcess } from '../../helpers/roles.js';
import { knativeReady, NS } from '../kubernetes/fixtures.js';

let api: FakeKubeApi;
let redis: RedisServer;
let rm: RoleProcess;
let rmEnv: Record<string, string>;
const rmArgs = ['resource-manager', '--redis', '', '--platform', 'kubernetes', '--health-timeout-ms', '3000'];
let kubeconfig: { path: string; remove: () => Promise<void> };
let client: ResourceManagerClient;

test.before(async () => {
  api = await startFakeKubeApi();
  api.put({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'gpu-a' },
    status: { allocatable: { 'nvidia.com/gpu': '2' }, conditions: [{ type: 'Ready', status: 'True' }], addresses: [{ type: 'InternalIP', address: '10.1.0.1' }] },
  });
  redis = await startRedis();
  kubeconfig = await writeKubeconfig(api.url);
  rmArgs[2] = redis.url;
  rmEnv = {
    KUBECONFIG: kubeconfig.path,
    CORNSERVE_NAMESPACE: NS,
    CORNSERVE_STORE_URL: 'redis://redis.cornserve.svc.cluster.local:6379',
    CORNSERVE_DISPATCHER_URL: 'http://dispatcher.cornserve.svc.cluster.local:8000',
  };
  rm = await startRole(CLI, rmArgs, rmEnv);
  client = new ResourceManagerClient(rm.url);
});

test.after.always(async () => {
  await rm?.stop();
  await redis?.stop();
  await api?.close();
  await kubeconfig?.remove();
});

test.serial('the resource manager reports the kubernetes platform on /health', async (t) => {
  t.is((await client.health()).platform, 'kubernetes');
});

test.serial('a task deployed through the resource manager becomes a Deployment with a GPU limit on the GPU node (rolled back when it never gets healthy)', async (t) => {
  const progress: string[] = [];
  const deploying = client.deploy([new EchoTask({ serviceTimeMs: 0 })], (p) => progress.push(p.state));
  const deployment = await waitUntil('the executor Deployment', () => api.list('apps/v1', 'Deployment', NS)[0], { timeoutMs: 20_000 });
  validateManifest({ apiVersion: 'apps/v1', kind: 'Deployment', ...deployment });
  const pod = deployment.spec.template.spec;
  t.is(pod.containers[0].resources.limits['nvidia.com/gpu'], '1');
  t.deepEqual(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values, ['gpu-a'], 'pinned to its node');
  t.is(deployment.spec.replicas, 1);

  const e = await t.throwsAsync(deploying);
  t.regex(e.message, /nothing was deployed/);
  t.deepEqual(progress, ['deploying', 'failed']);
  t.deepEqual(api.list('apps/v1', 'Deployment', NS), [], 'rolled back');
  t.deepEqual(await client.listTasks(), []);
});

test.serial('an app function deployed through the resource manager becomes a Knative Service with its source ConfigMap', async (t) => {
  const source = "export default defineApp({ name: 'hello' });\n";
  const deploying = client.deployAppFunction({
    appId: 'app-0123',
    name: 'hello',
    source,
    launch: { kind: 'app-function', entry: 'functions/runtime/main.ts', image: 'cornserve/app-function', args: [], devicesPerExecutor: 0 },
    env: { CORNSERVE_APP_SOURCE: '/tmp/gateway-local/app.ts', CORNSERVE_DISPATCHER_URL: 'http://dispatcher.cornserve.svc.cluster.local:8000' },
  });
  await waitUntil('the Knative Service', () => api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-hello'), { timeoutMs: 20_000 });
  knativeReady(api, 'cs-app-hello');
  const instance = await deploying;
  t.is(instance.url, `http://cs-app-hello.${NS}.svc.cluster.local`);

  const ksvc = api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-hello')!;
  const configMap = api.get('v1', 'ConfigMap', NS, 'cs-app-hello-source')!;
  validateManifest({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', ...ksvc });
  validateManifest({ apiVersion: 'v1', kind: 'ConfigMap', ...configMap });
  t.is((configMap.data as Record<string, string>)['app.ts'], source);
  const container = ksvc.spec.template.spec.containers[0];
  t.regex(container.image, /cornserve\/app-runtime/, 'the runtime image, not the local launch spec');
  const sourceEnv = container.env.filter((v: { name: string }) => v.name === 'CORNSERVE_APP_SOURCE');
  t.deepEqual(sourceEnv.map((v: { value: string }) => v.value), ['/etc/cornserve/app/app.ts'], "the gateway's local path is dropped");

  await client.deleteAppFunction('app-0123');
  t.is(api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-hello'), undefined);
});

test.serial('a restarted resource-manager process reconciles the cluster with the store (a labelled object nobody knows is deleted)', async (t) => {
  await rm.stop();
  const labels = { 'app.kubernetes.io/managed-by': 'cornserve', 'app.kubernetes.io/component': 'executor', 'cornserve.ai/executor-id': 'stray' };
  api.put({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cs-exec-stray', namespace: NS, labels },
    spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'executor', image: 'x' }] } } },
  });
  rm = await startRole(CLI, rmArgs, rmEnv, rm.port);
  t.is(api.get('apps/v1', 'Deployment', NS, 'cs-exec-stray'), undefined);
});

test.serial('a restarted resource-manager process adopts the running executors: scale works without restarting them', async (t) => {
  await rm.stop();
  // What a previous resource manager left: a ready task with two executors (Deployments in the cluster, routes in
  // the Store). Their routes point at real echo executors on this machine, so health checks can pass; each runs
  // with the executor id its Deployment gives it (health answers name it, and the manager checks who answers).
  const echos: EchoExecutor[] = [];
  t.teardown(() => Promise.all(echos.map((e) => e.stop())));
  for (let i = 0; i < 2; i++) echos.push(await startEchoExecutor({ executorId: `echo-adopt-${i}` }));
  const task = new EchoTask({ serviceTimeMs: 0 });
  const taskId = taskIdOf(task);
  const store = createStore({ redisUrl: redis.url });
  t.teardown(() => store.close());
  await store.ready();
  await store.acquireTask(newTaskRecord(task));
  const routes: ExecutorRoute[] = echos.map((e, rank) => ({
    executorId: e.executorId,
    taskId,
    url: e.url,
    sidecarRanks: [rank],
    devices: [{ node: 'gpu-a', globalRank: rank, localRank: rank }],
    state: 'ready',
    outstanding: 0,
    startedAt: Date.now() + rank,
  }));
  for (const route of routes) {
    await store.putExecutor(route);
    const labels = { 'app.kubernetes.io/managed-by': 'cornserve', 'app.kubernetes.io/component': 'executor', 'cornserve.ai/executor-id': labelValue(route.executorId) };
    const metadata = { namespace: NS, labels, annotations: { 'cornserve.ai/executor-id': route.executorId } };
    const spec = { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'executor', image: 'x' }] } } };
    api.put({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { ...metadata, name: executorObjectName(route.executorId) }, spec: { replicas: 1, ...spec } });
    api.put({ apiVersion: 'v1', kind: 'Service', metadata: { ...metadata, name: executorObjectName(route.executorId) }, spec: { selector: labels, ports: [{ port: 80 }] } });
  }
  await store.updateTask(taskId, { devices: routes.flatMap((r) => r.devices), state: 'ready' });

  const kept = () => api.get('apps/v1', 'Deployment', NS, executorObjectName(routes[1]!.executorId));
  const before = kept()!.metadata;

  rm = await startRole(CLI, rmArgs, rmEnv, rm.port);
  const status = await client.scale(taskId, -1);

  t.deepEqual(status.executors.map((e) => e.executorId), [routes[1]!.executorId], 'the oldest executor was drained and removed');
  t.is(api.get('apps/v1', 'Deployment', NS, executorObjectName(routes[0]!.executorId)), undefined, 'its Deployment deleted');
  t.deepEqual([kept()?.metadata.uid, kept()?.metadata.resourceVersion], [before.uid, before.resourceVersion], 'the other Deployment is untouched (not re-created)');
  t.is((await echo(routes[1]!.url, 'still here')).status, 200);
  t.deepEqual(status.devices, routes[1]!.devices);
});

test.serial('an autoscale decision of the resource manager creates an executor Deployment (the same decisions drive the cluster)', async (t) => {
  // The task adopted above runs one executor; a policy of min 2 makes the autoscaler decide 1 -> 2 on its next tick.
  const taskId = taskIdOf(new EchoTask({ serviceTimeMs: 0 }));
  const before = new Set(api.list('apps/v1', 'Deployment', NS).map((d) => d.metadata.name as string));
  await client.setAutoscale(taskId, { min: 2, max: 2, target: 2 }, 'admin');
  t.teardown(async () => void (await client.setAutoscale(taskId, { min: 1, max: 2, target: 2 }, 'admin'))); // no more attempts
  const created = await waitUntil('a new executor Deployment', () => api.list('apps/v1', 'Deployment', NS).find((d) => !before.has(d.metadata.name)), { timeoutMs: 60_000, intervalMs: 100 });
  validateManifest({ apiVersion: 'apps/v1', kind: 'Deployment', ...created });
  t.is(created.spec.replicas, 1);
  t.is(created.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu'], '1');
  // No pod can answer at a cluster address here: the start fails its health check, is reported and backed off.
  const decision = await waitUntil('the failed decision recorded', async () => {
    const d = (await client.listTasks()).find((s) => s.taskId === taskId)?.autoscale?.lastDecision;
    return d?.reason.includes('FAILED') ? d : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200 });
  t.regex(decision.reason, /below min 2/);
});

test.serial('a unit task registered in the store (by any gateway) appears as a TaskDefinition custom resource, and goes when unregistered', async (t) => {
  const store = createStore({ redisUrl: redis.url });
  t.teardown(() => store.close());
  await store.ready();
  const object = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false };
  const definition: TaskDefinitionJSON = {
    name: 'shout',
    className: 'ShoutTask',
    configSchema: { type: 'object', properties: {}, additionalProperties: false },
    inputSchema: object,
    outputSchema: object,
    descriptor: { kind: 'http-json', path: '/shout', launch: { script: 'examples/shout.mjs', image: 'example/shout' } },
  };
  t.is(await store.putTaskDefinition({ name: 'shout', className: 'ShoutTask', digest: definitionDigest(definition), definition, source: '', registeredAt: Date.now() }), 'created');

  const cr = await waitUntil('the TaskDefinition', () => api.get('cornserve.ai/v1', 'TaskDefinition', NS, 'shout'), { timeoutMs: 20_000 });
  t.like(cr.spec, { className: 'ShoutTask', descriptorRef: 'shout' });
  t.like(api.get('cornserve.ai/v1', 'ExecutionDescriptor', NS, 'shout')?.spec, { taskClass: 'ShoutTask', launch: { image: 'example/shout' } });

  await store.deleteTaskDefinition('shout');
  await waitUntil('the TaskDefinition deleted', () => api.list('cornserve.ai/v1', 'TaskDefinition', NS).length === 0, { timeoutMs: 20_000 });
  // Its ExecutionDescriptor goes right after it (a second delete call): wait for it too rather than race it.
  await waitUntil('the ExecutionDescriptor deleted', () => api.list('cornserve.ai/v1', 'ExecutionDescriptor', NS).length === 0, { timeoutMs: 20_000 });
  t.deepEqual(api.list('cornserve.ai/v1', 'ExecutionDescriptor', NS), []);
});
