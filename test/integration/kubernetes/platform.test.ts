/**
 * KubernetesPlatform against the fake API server (test/helpers/fake-kube-api.ts): deploy, scale up, scale
 * down, teardown, pod failures, app functions and restart-and-reconcile, each asserting the exact requests
 * the API server received. The tests play the cluster's controllers (kubelet, Knative) by writing objects.
 */
import test from 'ava';
import { KubeConfig } from '@kubernetes/client-node';
import { waitUntil } from '../../../lib/wait.js';
import { KubernetesPlatform } from '../../../control/platform/kubernetes/platform.js';
import { executorDeployment, executorService, appKnativeService } from '../../../control/platform/kubernetes/manifests.js';
import {
  APPLY, APPS, KSVC, MANAGED, NS, V1, appSpec, deployReady, executorSpec, knativeReady, lines, rig, runPod, setPodStatus, watchQuery, whenWatched,
} from './fixtures.js';

const RV = /resourceVersion=\d+/;
const norm = (ls: string[]) => ls.map((l) => l.replace(RV, 'resourceVersion=RV'));
const POD_WATCH = `GET ${V1}/pods?${watchQuery({ labelSelector: MANAGED }, 'RV')}`;
const POD_LIST = `GET ${V1}/pods?labelSelector=${MANAGED}`;

const gpuNode = (name: string, gpus: string, ready = 'True') => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'nvidia.com/gpu.present': 'true' } },
  status: {
    allocatable: { cpu: '32', 'nvidia.com/gpu': gpus },
    conditions: [{ type: 'Ready', status: ready }],
    addresses: [{ type: 'InternalIP', address: `10.1.0.${name.at(-1) === 'a' ? 1 : 2}` }],
  },
});

// ---------- nodes ----------

test('listNodes reads the Ready GPU nodes from the API server', async (t) => {
  const r = await rig(t);
  r.api.put(gpuNode('gpu-a', '4'));
  r.api.put(gpuNode('gpu-b', '2'));
  r.api.put(gpuNode('gpu-c', '8', 'False'));
  const nodes = await r.platform.listNodes();
  t.deepEqual(nodes, [
    { node: 'gpu-a', devices: 4, address: '10.1.0.1', sidecarUrl: 'http://10.1.0.1:10000', deviceKind: 'cuda' },
    { node: 'gpu-b', devices: 2, address: '10.1.0.2', sidecarUrl: 'http://10.1.0.2:10000', deviceKind: 'cuda' },
  ]);
  t.deepEqual(lines(r.api.take()), ['GET /api/v1', 'GET /api/v1/nodes']);
});

test('API errors surface as KUBE_API_ERROR with the API server\'s answer', async (t) => {
  const r = await rig(t);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: r.api.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'wrong' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u', namespace: NS }],
    currentContext: 'c',
  });
  const p = r.restart({ kubeConfig: kc });
  const err = await t.throwsAsync(p.listNodes());
  t.like(err, { code: 'KUBE_API_ERROR', status: 502 });
  t.regex(err!.message, /401/);
});

// ---------- deploy ----------

test('deploying an executor applies its Service and Deployment with server-side apply', async (t) => {
  const r = await rig(t);
  const instance = await r.platform.startExecutor(executorSpec('e1'));
  t.deepEqual(instance, {
    executorId: 'e1',
    taskId: 'echobasetask-0123456789ab',
    url: 'http://cs-exec-e1.cornserve.svc.cluster.local:8000',
    node: 'gpu-a',
    devices: [{ node: 'gpu-a', globalRank: 0, localRank: 0 }],
  });
  const reqs = r.api.take();
  t.deepEqual(norm(lines(reqs)), [
    'GET /api/v1',
    POD_LIST,
    POD_WATCH,
    `PATCH ${V1}/services/cs-exec-e1?${APPLY}`,
    'GET /apis/apps/v1',
    `PATCH ${APPS}/deployments/cs-exec-e1?${APPLY}`,
  ]);
  const patches = reqs.filter((q) => q.method === 'PATCH');
  for (const p of patches) t.is(p.contentType, 'application/apply-patch+yaml');
  const dep = patches[1]!.body;
  const c = dep.spec.template.spec.containers[0];
  t.is(dep.spec.replicas, 1);
  t.deepEqual(c.resources, { limits: { 'nvidia.com/gpu': '1' } });
  t.deepEqual(dep.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values, ['gpu-a']);
  t.like(dep.metadata.labels, { 'app.kubernetes.io/managed-by': 'cornserve', 'cornserve.ai/executor-id': 'e1', 'cornserve.ai/task-id': 'echobasetask-0123456789ab' });
  t.is(c.image, 'docker.io/cornserve/echo:latest');
  t.deepEqual(c.args, ['--service-time-ms', '0', '--host', '0.0.0.0']);
  t.is(c.env.find((e: { name: string }) => e.name === 'CORNSERVE_SIDECAR_RANKS').value, '0');
  t.deepEqual(patches[0]!.body.spec.selector, { 'cornserve.ai/executor-id': 'e1' });
  // Nothing the builders produce is lost on the way through the client's serializer.
  t.deepEqual(dep, executorDeployment(executorSpec('e1'), r.platform.options));
  t.deepEqual(patches[0]!.body, executorService(executorSpec('e1'), r.platform.options));
});

test('applying the same executor twice sends the same patch and changes nothing', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const before = r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1')!.metadata.resourceVersion;
  r.api.take();
  await r.platform.startExecutor(executorSpec('e1'));
  const again = r.api.take();
  t.deepEqual(lines(again), [`PATCH ${V1}/services/cs-exec-e1?${APPLY}`, `PATCH ${APPS}/deployments/cs-exec-e1?${APPLY}`]);
  const first = r.api.requests.filter((q) => q.method === 'PATCH' && q.path.endsWith('/deployments/cs-exec-e1'));
  t.deepEqual(first[0]!.body, first[1]!.body);
  t.is(r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1')!.metadata.resourceVersion, before);
});

test('an executor whose devices are on another node is refused before any request', async (t) => {
  const r = await rig(t);
  const bad = { ...executorSpec('e1'), devices: [{ node: 'gpu-b', globalRank: 3, localRank: 0 }] };
  await t.throwsAsync(r.platform.startExecutor(bad), { message: /not on node gpu-a/ });
  t.deepEqual(r.api.take(), []);
});

test('waitForExecutorReady resolves once the Deployment reports a ready replica', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  r.api.take();
  await Promise.all([
    r.platform.waitForExecutorReady('e1'),
    whenWatched(r.api, `${APPS}/deployments`, 'cs-exec-e1', () =>
      r.api.setStatus('apps/v1', 'Deployment', NS, 'cs-exec-e1', { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1 }),
    ),
  ]);
  const rv = r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1')!.metadata.resourceVersion!;
  t.deepEqual(lines(r.api.take()), [
    `GET ${APPS}/deployments/cs-exec-e1`,
    `GET ${APPS}/deployments?${watchQuery({ fieldSelector: 'metadata.name=cs-exec-e1' }, String(Number(rv) - 1))}`,
  ]);
});

test('waitForExecutorReady fails at once when the executor pod cannot pull its image', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const waiting = r.platform.waitForExecutorReady('e1');
  await whenWatched(r.api, `${APPS}/deployments`, 'cs-exec-e1', () =>
    runPod(r.api, 'cs-exec-e1', {
      phase: 'Pending',
      containerStatuses: [{ name: 'executor', ready: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff', message: 'pull access denied' } } }],
    }),
  );
  const err = await t.throwsAsync(waiting);
  t.like(err, { code: 'KUBE_NOT_READY' });
  t.regex(err!.message, /ImagePullBackOff: pull access denied/);
});

// ---------- scale up / down ----------

test('scaling up starts another executor pinned to its own node', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1', 'gpu-a', 0));
  r.api.take();
  await r.platform.startExecutor(executorSpec('e2', 'gpu-b', 4));
  t.deepEqual(lines(r.api.take()), [`PATCH ${V1}/services/cs-exec-e2?${APPLY}`, `PATCH ${APPS}/deployments/cs-exec-e2?${APPLY}`]);
  const nodeOf = (name: string) =>
    r.api.get('apps/v1', 'Deployment', NS, name)!.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values;
  t.deepEqual([nodeOf('cs-exec-e1'), nodeOf('cs-exec-e2')], [['gpu-a'], ['gpu-b']]);
  t.deepEqual(r.platform.listExecutors().map((e) => e.executorId), ['e1', 'e2']);
});

test("scaling down deletes one executor's Deployment, its pod with the grace period, and its Service", async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1', 'gpu-a', 0));
  await r.platform.startExecutor(executorSpec('e2', 'gpu-b', 4));
  runPod(r.api, 'cs-exec-e1');
  const pod = runPod(r.api, 'cs-exec-e2');
  r.api.take();
  await r.platform.stopExecutor('e2', { graceMs: 1500 });
  t.deepEqual(lines(r.api.take()), [
    `DELETE ${APPS}/deployments/cs-exec-e2?propagationPolicy=Background`,
    `GET ${V1}/pods?labelSelector=cornserve.ai/executor-id=e2`,
    `DELETE ${V1}/pods/${pod.metadata.name}?gracePeriodSeconds=2`,
    `DELETE ${V1}/services/cs-exec-e2`,
    `GET ${V1}/pods?labelSelector=cornserve.ai/executor-id=e2`,
  ]);
  t.truthy(r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1'));
  t.deepEqual(r.api.list('v1', 'Pod', NS).map((p) => p.metadata.name), ['cs-exec-e1-7d9f8-x2k4q']);
  t.deepEqual(r.events, [{ kind: 'executor-exited', executorId: 'e2', taskId: 'echobasetask-0123456789ab', code: null, signal: null, expected: true }]);
});

test('stopping an executor the platform does not know sends nothing', async (t) => {
  const r = await rig(t);
  await r.platform.stopExecutor('nope');
  t.deepEqual(r.api.take(), []);
  t.deepEqual(r.events, []);
});

// ---------- pod failures ----------

test('a restarted executor container is reported as an unexpected exit with its code and signal', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const pod = runPod(r.api, 'cs-exec-e1');
  setPodStatus(r.api, pod, {
    containerStatuses: [{ name: 'executor', ready: false, restartCount: 1, state: { running: {} }, lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }],
  });
  await waitUntil('exit event', () => r.events.length > 0);
  t.deepEqual(r.events, [{ kind: 'executor-exited', executorId: 'e1', taskId: 'echobasetask-0123456789ab', code: 137, signal: 'SIGKILL', expected: false }]);
});

test('a failed executor pod is reported once', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const pod = runPod(r.api, 'cs-exec-e1');
  setPodStatus(r.api, pod, { phase: 'Failed', reason: 'Evicted', containerStatuses: [] });
  setPodStatus(r.api, pod, { message: 'The node was low on resource: memory.' });
  await waitUntil('exit event', () => r.events.length > 0);
  await r.platform.startExecutor(executorSpec('e2')); // a full round trip through the API: later events have arrived
  t.deepEqual(r.events, [{ kind: 'executor-exited', executorId: 'e1', taskId: 'echobasetask-0123456789ab', code: null, signal: null, expected: false }]);
});

test("a pod deleted behind the platform's back is reported as an unexpected exit", async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const pod = runPod(r.api, 'cs-exec-e1');
  r.api.remove('v1', 'Pod', NS, pod.metadata.name);
  await waitUntil('exit event', () => r.events.length > 0);
  t.like(r.events[0], { kind: 'executor-exited', executorId: 'e1', expected: false });
});

test('the pod watch is re-opened from the last version after the server ends it', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const pod = runPod(r.api, 'cs-exec-e1');
  await waitUntil('pod seen', () => r.api.watches().length === 1);
  const lastRv = pod.metadata.resourceVersion!;
  r.api.take();
  r.api.closeWatches();
  await waitUntil('watch re-opened', () => r.api.watches().length === 1);
  t.deepEqual(lines(r.api.take()), [`GET ${V1}/pods?${watchQuery({ labelSelector: MANAGED }, lastRv)}`]);
  setPodStatus(r.api, pod, { containerStatuses: [{ name: 'executor', restartCount: 1, lastState: { terminated: { exitCode: 1 } } }] });
  await waitUntil('exit event', () => r.events.length > 0);
  t.like(r.events[0], { kind: 'executor-exited', executorId: 'e1', code: 1, expected: false });
});

// ---------- app functions ----------

test('deploying an app function applies its source ConfigMap and Knative Service and waits until Ready', async (t) => {
  const r = await rig(t);
  const instance = await deployReady(r, appSpec('app-1', 'echo'));
  t.deepEqual(instance, { appId: 'app-1', url: 'http://cs-app-echo.cornserve.svc.cluster.local' });
  const reqs = r.api.take();
  const applied = r.api.requests.find((q) => q.method === 'PATCH' && q.path.startsWith(KSVC))!;
  const ksvcRv = String(Number(r.api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-echo')!.metadata.resourceVersion) - 1);
  t.deepEqual(norm(lines(reqs)).slice(0, 3), ['GET /api/v1', POD_LIST, POD_WATCH]);
  t.deepEqual(lines(reqs).slice(3), [
    `PATCH ${V1}/configmaps/cs-app-echo-source?${APPLY}`,
    'GET /apis/serving.knative.dev/v1',
    `PATCH ${KSVC}/cs-app-echo?${APPLY}`,
    `GET ${KSVC}?${watchQuery({ fieldSelector: 'metadata.name=cs-app-echo' }, ksvcRv)}`,
  ]);
  t.deepEqual(applied.body, appKnativeService(appSpec('app-1', 'echo'), r.platform.options));
  const tmpl = applied.body.spec.template;
  t.like(tmpl.metadata.annotations, { 'autoscaling.knative.dev/target': '8', 'autoscaling.knative.dev/min-scale': '0', 'autoscaling.knative.dev/max-scale': '10' });
  const env = Object.fromEntries(tmpl.spec.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));
  t.like(env, {
    CORNSERVE_APP_SOURCE: '/etc/cornserve/app/app.ts',
    CORNSERVE_DISPATCHER_URL: 'http://dispatcher.cornserve.svc.cluster.local:8000',
    CORNSERVE_STORE_URL: 'redis://redis.cornserve.svc.cluster.local:6379',
  });
  t.is((r.api.get('v1', 'ConfigMap', NS, 'cs-app-echo-source')!.data as Record<string, string>)['app.ts'], appSpec('app-1', 'echo').source);
});

test('an app function Knative reports as failed is removed and the error names the reason', async (t) => {
  const r = await rig(t);
  const deploying = r.platform.deployAppFunction(appSpec('app-1', 'echo'));
  await whenWatched(r.api, KSVC, 'cs-app-echo', () =>
    r.api.setStatus('serving.knative.dev/v1', 'Service', NS, 'cs-app-echo', {
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: 'False', reason: 'RevisionFailed', message: 'Revision "cs-app-echo-00001" failed with message: image not found.' }],
    }),
  );
  const err = await t.throwsAsync(deploying);
  t.like(err, { code: 'KUBE_DEPLOY_FAILED' });
  t.regex(err!.message, /RevisionFailed: Revision "cs-app-echo-00001" failed/);
  t.deepEqual(lines(r.api.take()).slice(-2), [`DELETE ${KSVC}/cs-app-echo`, `DELETE ${V1}/configmaps/cs-app-echo-source`]);
  t.deepEqual([r.api.list('serving.knative.dev/v1', 'Service', NS), r.api.list('v1', 'ConfigMap', NS)], [[], []]);
  t.deepEqual(r.events, []);
});

test('an app function that is not Ready within its bound is removed (KUBE_NOT_READY)', async (t) => {
  const r = await rig(t, { readyTimeoutMs: 300 });
  await t.throwsAsync(r.platform.deployAppFunction(appSpec('app-1', 'echo')), { message: /app function echo \(app-1\) was not ready within 300 ms/ });
  t.deepEqual([r.api.list('serving.knative.dev/v1', 'Service', NS), r.api.list('v1', 'ConfigMap', NS)], [[], []]);
});

test('deleting an app function deletes its Knative Service and its ConfigMap', async (t) => {
  const r = await rig(t);
  await deployReady(r, appSpec('app-1', 'echo'));
  r.api.take();
  await r.platform.deleteAppFunction('app-1');
  t.deepEqual(lines(r.api.take()), [`DELETE ${KSVC}/cs-app-echo`, `DELETE ${V1}/configmaps/cs-app-echo-source`]);
  t.deepEqual(r.events, [{ kind: 'app-function-exited', appId: 'app-1', code: null, signal: null, expected: true }]);
});

test('a crashing app-function container is reported, a pod removed by scale-to-zero is not', async (t) => {
  const r = await rig(t);
  await deployReady(r, appSpec('app-1', 'echo'));
  const tmpl = r.api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-echo')!.spec.template;
  const pod = r.api.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'cs-app-echo-00001-deployment-5c7b9-abcde', namespace: NS, labels: { ...tmpl.metadata.labels, 'serving.knative.dev/service': 'cs-app-echo' } },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', restartCount: 0, state: { running: {} } }] },
  });
  setPodStatus(r.api, pod, { containerStatuses: [{ name: 'app', restartCount: 1, lastState: { terminated: { exitCode: 1, reason: 'Error' } } }] });
  await waitUntil('exit event', () => r.events.length > 0);
  r.api.remove('v1', 'Pod', NS, pod.metadata.name);
  await r.platform.startExecutor(executorSpec('e1')); // a round trip: the DELETED event has been handled
  t.deepEqual(r.events, [{ kind: 'app-function-exited', appId: 'app-1', code: 1, signal: null, expected: false }]);
});

// ---------- teardown ----------

test('shutdown ends a deployment still waiting for Knative', async (t) => {
  const r = await rig(t);
  const deploying = r.platform.deployAppFunction(appSpec('app-1', 'echo'));
  await whenWatched(r.api, KSVC, 'cs-app-echo', () => void r.platform.shutdown());
  await t.throwsAsync(deploying, { message: /shut down/ });
});

test('shutdown leaves executors and app functions running by default', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  await deployReady(r, appSpec('app-1', 'echo'));
  r.api.take();
  await r.platform.shutdown();
  await waitUntil('watches closed', () => r.api.watches().length === 0);
  t.deepEqual(r.api.take(), []);
  t.truthy(r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1'));
  t.truthy(r.api.get('serving.knative.dev/v1', 'Service', NS, 'cs-app-echo'));
  await t.throwsAsync(r.platform.startExecutor(executorSpec('e2')), { message: /shut down/ });
});

test("shutdown with onShutdown 'delete' tears down everything it started", async (t) => {
  const r = await rig(t, { onShutdown: 'delete' });
  await r.platform.startExecutor(executorSpec('e1'));
  await deployReady(r, appSpec('app-1', 'echo'));
  r.api.take();
  await r.platform.shutdown();
  t.deepEqual(lines(r.api.take()), [
    `DELETE ${KSVC}/cs-app-echo`,
    `DELETE ${V1}/configmaps/cs-app-echo-source`,
    `DELETE ${APPS}/deployments/cs-exec-e1?propagationPolicy=Background`,
    `GET ${V1}/pods?labelSelector=cornserve.ai/executor-id=e1`,
    `DELETE ${V1}/services/cs-exec-e1`,
  ]);
  t.deepEqual(
    [r.api.list('apps/v1', 'Deployment', NS), r.api.list('v1', 'Service', NS), r.api.list('serving.knative.dev/v1', 'Service', NS), r.api.list('v1', 'ConfigMap', NS)],
    [[], [], [], []],
  );
});

// ---------- restart and reconcile ----------

test('after a restart, reconcile adopts what the Store knows, recreates what is missing and deletes the rest', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1', 'gpu-a', 0));
  await r.platform.startExecutor(executorSpec('stale', 'gpu-b', 4));
  await deployReady(r, appSpec('app-1', 'keep'));
  await deployReady(r, appSpec('app-old', 'gone'));
  runPod(r.api, 'cs-exec-e1');
  await r.platform.shutdown(); // the resource manager goes away; the cluster keeps running

  const next = r.restart();
  r.api.take();
  const report = await next.reconcile({
    executors: [executorSpec('e1', 'gpu-a', 0), executorSpec('e2', 'gpu-b', 5)],
    apps: [appSpec('app-1', 'keep'), appSpec('app-2', 'new')],
  });
  t.deepEqual(report, {
    executors: { adopted: ['e1'], created: ['e2'], deleted: ['stale'] },
    apps: { adopted: ['app-1'], created: ['app-2'], deleted: ['app-old'] },
  });
  const executorSel = 'app.kubernetes.io/managed-by=cornserve,app.kubernetes.io/component=executor';
  const appSel = 'app.kubernetes.io/managed-by=cornserve,app.kubernetes.io/component=app-function';
  t.deepEqual(norm(lines(r.api.take())), [
    'GET /api/v1',
    POD_LIST,
    POD_WATCH,
    'GET /apis/apps/v1',
    `GET ${APPS}/deployments?labelSelector=${executorSel}`,
    `GET ${V1}/services?labelSelector=${executorSel}`,
    'GET /apis/serving.knative.dev/v1',
    `GET ${KSVC}?labelSelector=${appSel}`,
    `GET ${V1}/configmaps?labelSelector=${appSel}`,
    `DELETE ${APPS}/deployments/cs-exec-stale?propagationPolicy=Background`,
    `GET ${V1}/pods?labelSelector=cornserve.ai/executor-id=stale`,
    `DELETE ${V1}/services/cs-exec-stale`,
    `DELETE ${KSVC}/cs-app-gone`,
    `DELETE ${V1}/configmaps/cs-app-gone-source`,
    `PATCH ${V1}/services/cs-exec-e2?${APPLY}`,
    `PATCH ${APPS}/deployments/cs-exec-e2?${APPLY}`,
    `PATCH ${V1}/configmaps/cs-app-new-source?${APPLY}`,
    `PATCH ${KSVC}/cs-app-new?${APPLY}`,
  ]);
  t.deepEqual(
    r.api.list('apps/v1', 'Deployment', NS).map((d) => d.metadata.name).sort(),
    ['cs-exec-e1', 'cs-exec-e2'],
  );
  t.deepEqual(next.listExecutors().map((e) => [e.executorId, e.url]), [
    ['e1', 'http://cs-exec-e1.cornserve.svc.cluster.local:8000'],
    ['e2', 'http://cs-exec-e2.cornserve.svc.cluster.local:8000'],
  ]);
});

test('an adopted executor is watched and stopped like one the platform started', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  const pod = runPod(r.api, 'cs-exec-e1');
  await r.platform.shutdown();
  const next = r.restart();
  await next.reconcile({ executors: [executorSpec('e1')], apps: [] });
  setPodStatus(r.api, pod, { containerStatuses: [{ name: 'executor', restartCount: 1, lastState: { terminated: { exitCode: 2 } } }] });
  await waitUntil('exit event', () => r.events.length > 0);
  t.like(r.events[0], { kind: 'executor-exited', executorId: 'e1', code: 2, expected: false });
  await next.stopExecutor('e1', { graceMs: 0 });
  t.is(r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1'), undefined);
  t.is(r.api.get('v1', 'Pod', NS, pod.metadata.name), undefined);
});

test('reconcile re-applies the Service of an adopted executor that lost it', async (t) => {
  const r = await rig(t);
  await r.platform.startExecutor(executorSpec('e1'));
  await r.platform.shutdown();
  r.api.remove('v1', 'Service', NS, 'cs-exec-e1');
  const next = r.restart();
  r.api.take();
  const report = await next.reconcile({ executors: [executorSpec('e1')], apps: [] });
  t.deepEqual(report.executors, { adopted: ['e1'], created: [], deleted: [] });
  t.deepEqual(lines(r.api.take()).filter((l) => !l.startsWith('GET')), [`PATCH ${V1}/services/cs-exec-e1?${APPLY}`]);
  t.truthy(r.api.get('v1', 'Service', NS, 'cs-exec-e1'));
});

test('a platform configured for another namespace creates its objects there only', async (t) => {
  const r = await rig(t);
  const other = new KubernetesPlatform({ kubeConfig: r.api.kubeConfig('elsewhere'), namespace: 'team-a', pollIntervalMs: 10 });
  t.teardown(() => other.shutdown());
  await other.startExecutor(executorSpec('e1'));
  t.truthy(r.api.get('apps/v1', 'Deployment', 'team-a', 'cs-exec-e1'));
  t.is(r.api.get('apps/v1', 'Deployment', NS, 'cs-exec-e1'), undefined);
});
