/**
 * KubernetesPlatform against a real control plane (kube-apiserver, controller-manager, scheduler and etcd
 * 1.20, test/kube/cluster.ts) with a process kubelet running the pods: real validation, Deployment →
 * ReplicaSet → Pod, scheduling on the node's GPU count, readiness from the probe, restarts, watches across an
 * API server restart, and adoption by a second platform instance.
 */
import test, { type ExecutionContext } from 'ava';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { KubernetesPlatform } from '../../../control/platform/kubernetes/platform.js';
import type { KubernetesPlatformInit } from '../../../control/platform/kubernetes/options.js';
import type { ExecutorSpec, PlatformEvent } from '../../../lib/platform.js';
import { waitUntil } from '../../../lib/wait.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useLocalCluster } from '../../kube/fixture.js';
import { REPO_ROOT, type ProcessKubelet } from '../../kube/kubelet.js';
import { startKnativeStandIn } from '../../kube/knative.js';

// A lost node is noticed after 8 s without heartbeats and its pods are evicted 3 s later (defaults: 40 s, 300 s).
const kube = useLocalCluster(test, { nodeGraceSeconds: 8, evictionSeconds: 3 });
let node: ProcessKubelet;
test.before(async () => {
  node = await kube().kubelet({ node: 'gpu-a', gpus: 4, labels: { 'nvidia.com/gpu.present': 'true' } });
});

let executors = 0;
const echoSpec = (over: Partial<ExecutorSpec> = {}): ExecutorSpec => {
  const rank = executors % 4;
  executors += 1;
  return {
    executorId: `echo-${executors}`,
    taskId: 'echobasetask-0123456789ab',
    node: 'gpu-a',
    devices: [{ node: 'gpu-a', globalRank: rank, localRank: rank }],
    launch: { kind: 'echo', entry: 'executors/echo/main.ts', image: 'cornserve/echo', args: ['--service-time-ms', '0'], devicesPerExecutor: 1, healthPath: '/health' },
    ...over,
  };
};

async function platformIn(namespace: string, over: Partial<KubernetesPlatformInit> = {}) {
  const events: PlatformEvent[] = [];
  const platform = new KubernetesPlatform({
    kubeConfig: kube().cluster.kubeConfig(),
    namespace,
    dispatcherUrl: `http://dispatcher.${namespace}.svc.cluster.local:8000`,
    readyTimeoutMs: 90_000,
    pollIntervalMs: 100,
    watchRetryMs: 200,
    terminationGraceSeconds: 2,
    ...over,
  });
  platform.onEvent((e) => events.push(e));
  return { platform, events };
}

/** A platform in namespace `<name>-…` with one ready echo executor (`spec`); the platform shuts down after the test. */
async function runningEcho(t: ExecutionContext, name: string, spec = echoSpec()) {
  const ns = await kube().namespace(name);
  const { platform, events } = await platformIn(ns);
  t.teardown(() => platform.shutdown());
  await platform.startExecutor(spec);
  await platform.waitForExecutorReady(spec.executorId);
  return { ns, platform, events, spec };
}

const core = () => kube().cluster.kubeConfig().makeApiClient(CoreV1Api);
const apps = () => kube().cluster.kubeConfig().makeApiClient(AppsV1Api);

async function executorPod(namespace: string, executorId: string) {
  const pods = await core().listNamespacedPod({ namespace, labelSelector: `cornserve.ai/executor-id=${executorId}` });
  return pods.items.find((p) => !p.metadata?.deletionTimestamp);
}

async function echoVia(namespace: string, executorId: string, text: string): Promise<unknown> {
  const pod = await executorPod(namespace, executorId);
  const res = await fetch(`http://${pod!.status!.podIP}:8000/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
  return res.json();
}

test.serial('an executor started through the platform is scheduled, run and answers from its pod', async (t) => {
  const { ns, spec } = await runningEcho(t, 'start');
  const pod = await executorPod(ns, spec.executorId);
  t.is(pod?.spec?.nodeName, 'gpu-a', 'the scheduler bound it to the node its devices are on');
  t.deepEqual(await echoVia(ns, spec.executorId, 'hello'), { echo: 'hello' });
});

test.serial('a Deployment the API server rejects fails startExecutor with the server\'s message', async (t) => {
  const ns = await kube().namespace('reject');
  const { platform } = await platformIn(ns);
  t.teardown(() => platform.shutdown());
  const err = await t.throwsAsync(platform.startExecutor(echoSpec({ env: { '1NOT_A_NAME': 'x' } })));
  t.like(err, { code: 'KUBE_API_ERROR', details: { apiStatus: 422 } });
  t.regex(err!.message, /a valid environment variable name must consist of/);
});

test.serial('a killed executor process is restarted in its pod, reported as an unexpected exit, and answers again', async (t) => {
  const { ns, platform, events, spec } = await runningEcho(t, 'crash');
  const before = await executorPod(ns, spec.executorId);
  process.kill(node.pidOf(before!.metadata!.name!)!, 'SIGKILL');
  const exit = await waitUntil('executor-exited event', () => events.find((e) => e.kind === 'executor-exited'), { timeoutMs: 30_000 });
  t.like(exit, { executorId: spec.executorId, expected: false, signal: 'SIGKILL' });
  await platform.waitForExecutorReady(spec.executorId);
  const after = await waitUntil('the restarted container ready', async () => {
    const p = await executorPod(ns, spec.executorId);
    return p?.status?.containerStatuses?.[0]?.ready && p;
  }, { timeoutMs: 30_000 });
  t.is(after.metadata?.uid, before?.metadata?.uid, 'the same pod, its container restarted');
  t.is(after.status?.containerStatuses?.[0]?.restartCount, 1);
  t.deepEqual(await echoVia(ns, spec.executorId, 'again'), { echo: 'again' });
});

test.serial('a second platform instance adopts the running executor without restarting it', async (t) => {
  const ns = await kube().namespace('adopt');
  const first = await platformIn(ns);
  const spec = echoSpec();
  await first.platform.startExecutor(spec);
  await first.platform.waitForExecutorReady(spec.executorId);
  const pod = await executorPod(ns, spec.executorId);
  await first.platform.shutdown(); // detach: the executor keeps running
  const second = await platformIn(ns);
  t.teardown(() => second.platform.shutdown());
  const report = await second.platform.reconcile({ executors: [spec], apps: [] });
  t.deepEqual(report.executors, { adopted: [spec.executorId], created: [], deleted: [] });
  const still = await executorPod(ns, spec.executorId);
  t.is(still?.metadata?.uid, pod?.metadata?.uid);
  t.is(still?.status?.containerStatuses?.[0]?.restartCount, 0);
  await second.platform.stopExecutor(spec.executorId, { graceMs: 1000 });
  t.is(await executorPod(ns, spec.executorId), undefined, 'stopExecutor waits until the pod is gone');
  const left = await apps().listNamespacedDeployment({ namespace: ns });
  t.deepEqual(left.items.map((d) => d.metadata?.name), []);
});

test.serial('the pod watch resumes after the API server restarts and reports an exit exactly once', async (t) => {
  const { ns, platform, events, spec } = await runningEcho(t, 'apirestart');
  await kube().cluster.restartApiServer();
  // The same spec again (a retried deploy): server-side apply leaves the one Deployment as it is.
  await platform.startExecutor(spec);
  const deployments = await apps().listNamespacedDeployment({ namespace: ns });
  t.is(deployments.items.length, 1);
  t.is(deployments.items[0]!.metadata?.generation, 1, 'nothing was changed by the second apply');
  const pod = await executorPod(ns, spec.executorId);
  process.kill(node.pidOf(pod!.metadata!.name!)!, 'SIGKILL');
  await waitUntil('executor-exited after the restart', () => events.some((e) => e.kind === 'executor-exited'), { timeoutMs: 60_000 });
  await platform.waitForExecutorReady(spec.executorId);
  t.is(events.filter((e) => e.kind === 'executor-exited').length, 1);
});

const echoApp = (appId: string, image = 'cornserve/app-runtime') => ({
  appId,
  name: 'echo',
  source: readFileSync(join(REPO_ROOT, 'functions/apps/echo.ts'), 'utf8'),
  launch: { kind: 'app-runtime', entry: 'functions/runtime/main.ts', image, args: [], devicesPerExecutor: 0, healthPath: '/health' },
});

/** A platform in namespace `<name>-…` with the Knative stand-in reconciling there; both stop after the test. */
async function withKnative(t: ExecutionContext, name: string) {
  const ns = await kube().namespace(name);
  const knative = await startKnativeStandIn(kube().cluster.kubeConfig(), ns);
  t.teardown(() => knative.stop());
  const { platform } = await platformIn(ns);
  t.teardown(() => platform.shutdown());
  return { ns, platform };
}

test.serial('an app function becomes Ready through its Knative Service and its pod serves the app', async (t) => {
  const { ns, platform } = await withKnative(t, 'app');
  const app = await platform.deployAppFunction(echoApp('app-1'));
  t.is(app.url, `http://cs-app-echo.${ns}.svc.cluster.local`);
  const pods = await core().listNamespacedPod({ namespace: ns, labelSelector: 'serving.knative.dev/service=cs-app-echo' });
  t.is(pods.items.length, 1);
  const health = await fetch(`http://${pods.items[0]!.status!.podIP}:8080/health`);
  t.is(health.status, 200);
});

test.serial('an app function whose image cannot be pulled fails with Knative\'s reason and is removed again', async (t) => {
  const { ns, platform } = await withKnative(t, 'badapp');
  const err = await t.throwsAsync(platform.deployAppFunction(echoApp('app-2', 'cornserve/no-such-image')));
  t.like(err, { code: 'KUBE_DEPLOY_FAILED' });
  t.regex(err!.message, /ErrImagePull: image .*cornserve\/no-such-image.* is not known/);
  // The Knative Service is deleted; the real garbage collector removes the Deployment it owned.
  await waitUntil('the revision Deployment collected', async () => (await apps().listNamespacedDeployment({ namespace: ns })).items.length === 0, { timeoutMs: 60_000 });
  t.pass();
});

test.serial('an executor on a node that stops heartbeating is reported gone once Kubernetes evicts its pod', async (t) => {
  const ns = await kube().namespace('nodeloss');
  const lost = await kube().kubelet({ node: 'gpu-b', gpus: 2, labels: { 'nvidia.com/gpu.present': 'true' } });
  const { platform, events } = await platformIn(ns);
  t.teardown(() => platform.shutdown());
  const spec = echoSpec({ node: 'gpu-b', devices: [{ node: 'gpu-b', globalRank: 4, localRank: 0 }] });
  await platform.startExecutor(spec);
  await platform.waitForExecutorReady(spec.executorId);
  await lost.fail();
  const exit = await waitUntil('executor-exited after the node was lost', () => events.find((e) => e.kind === 'executor-exited'), { timeoutMs: 90_000, intervalMs: 200 });
  t.like(exit, { executorId: spec.executorId, expected: false });
  const nodes = await platform.listNodes();
  t.deepEqual(nodes.map((n) => n.node), ['gpu-a'], 'the lost node is no longer offered for placement');
});
