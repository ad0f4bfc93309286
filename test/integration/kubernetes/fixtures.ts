/**
 * Shared setup for the KubernetesPlatform tests against the fake API server: a platform wired to a fresh
 * fake, helpers that play the cluster's part (the kubelet running a pod, Knative marking a Service Ready),
 * and a compact rendering of recorded requests for exact assertions.
 */
import type { ExecutionContext } from 'ava';
import { KubernetesPlatform } from '../../../control/platform/kubernetes/platform.js';
import type { KubernetesPlatformInit } from '../../../control/platform/kubernetes/options.js';
import type { AppFunctionSpec, ExecutorSpec, PlatformEvent } from '../../../lib/platform.js';
import type { LaunchSpec } from '../../../lib/descriptor.js';
import { waitUntil } from '../../../lib/wait.js';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject, type RecordedRequest } from '../../helpers/fake-kube-api.js';

export const NS = 'cornserve';
export const MANAGED = 'app.kubernetes.io/managed-by=cornserve';
export const V1 = `/api/v1/namespaces/${NS}`;
export const APPS = `/apis/apps/v1/namespaces/${NS}`;
export const KSVC = `/apis/serving.knative.dev/v1/namespaces/${NS}/services`;
export const APPLY = 'fieldManager=cornserve&force=true';

export const echoLaunch: LaunchSpec = {
  kind: 'echo',
  entry: 'executors/echo/main.ts',
  image: 'cornserve/echo',
  args: ['--service-time-ms', '0'],
  devicesPerExecutor: 1,
};

export const executorSpec = (executorId: string, node = 'gpu-a', rank = 0): ExecutorSpec => ({
  executorId,
  taskId: 'echobasetask-0123456789ab',
  node,
  devices: [{ node, globalRank: rank, localRank: 0 }],
  launch: echoLaunch,
});

export const appSpec = (appId: string, name: string): AppFunctionSpec => ({
  appId,
  name,
  source: `export default defineApp({ name: '${name}' });\n`,
  launch: { kind: 'app-runtime', entry: 'functions/runtime/main.ts', image: 'cornserve/app-runtime', args: [], devicesPerExecutor: 0 },
});

export interface Rig {
  api: FakeKubeApi;
  platform: KubernetesPlatform;
  events: PlatformEvent[];
  /** A second platform on the same fake cluster (a restarted resource manager). */
  restart(overrides?: Partial<KubernetesPlatformInit>): KubernetesPlatform;
}

export async function rig(t: ExecutionContext, overrides: Partial<KubernetesPlatformInit> = {}): Promise<Rig> {
  const api = await startFakeKubeApi({ garbageCollection: false });
  const platforms: KubernetesPlatform[] = [];
  const events: PlatformEvent[] = [];
  const make = (o: Partial<KubernetesPlatformInit>) => {
    const p = new KubernetesPlatform({
      kubeConfig: api.kubeConfig(NS),
      namespace: NS,
      storeUrl: 'redis://redis.cornserve.svc.cluster.local:6379',
      dispatcherUrl: 'http://dispatcher.cornserve.svc.cluster.local:8000',
      pollIntervalMs: 10,
      watchRetryMs: 20,
      readyTimeoutMs: 10_000,
      ...overrides,
      ...o,
    });
    p.onEvent((e) => events.push(e));
    platforms.push(p);
    return p;
  };
  const platform = make({});
  t.teardown(async () => {
    for (const p of platforms) await p.shutdown();
    await api.close();
  });
  return { api, platform, events, restart: (o = {}) => make(o) };
}

/** One request as `METHOD path?sorted&query` (the watch's bookkeeping parameters included). */
export function line(r: RecordedRequest): string {
  const q = Object.entries(r.query)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  return `${r.method} ${r.path}${q ? `?${q}` : ''}`;
}

export const lines = (rs: RecordedRequest[]) => rs.map(line);

/** The query string of a watch request the platform sends (sorted like line()). */
export const watchQuery = (selector: { labelSelector?: string; fieldSelector?: string }, resourceVersion: string) =>
  [
    'allowWatchBookmarks=true',
    ...(selector.fieldSelector ? [`fieldSelector=${selector.fieldSelector}`] : []),
    ...(selector.labelSelector ? [`labelSelector=${selector.labelSelector}`] : []),
    `resourceVersion=${resourceVersion}`,
    'timeoutSeconds=20',
    'watch=true',
  ].join('&');

/** The kubelet at work: a running pod for an executor Deployment (as its ReplicaSet would create it). */
export function runPod(api: FakeKubeApi, deploymentName: string, status: Record<string, unknown> = {}): KubeObject {
  const d = api.get('apps/v1', 'Deployment', NS, deploymentName);
  if (!d) throw new Error(`no deployment ${deploymentName}`);
  const tmpl = d.spec.template;
  return api.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${deploymentName}-7d9f8-x2k4q`,
      namespace: NS,
      labels: tmpl.metadata.labels,
      annotations: tmpl.metadata.annotations,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: deploymentName, uid: d.metadata.uid! }],
    },
    spec: tmpl.spec,
    status: {
      phase: 'Running',
      containerStatuses: [{ name: 'executor', ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }],
      ...status,
    },
  });
}

/** Replaces a pod's status (the kubelet reporting). */
export function setPodStatus(api: FakeKubeApi, pod: KubeObject, status: Record<string, unknown>): KubeObject {
  return api.setStatus('v1', 'Pod', NS, pod.metadata.name, { ...(api.get('v1', 'Pod', NS, pod.metadata.name)?.status ?? {}), ...status });
}

/** Waits until the platform watches the named object, then lets `update` play the controller. */
export async function whenWatched(api: FakeKubeApi, collectionPath: string, name: string, update: () => void): Promise<void> {
  await waitUntil(`a watch on ${collectionPath}/${name}`, () =>
    api.watches().some((w) => w.path === collectionPath && w.fieldSelector === `metadata.name=${name}`),
    { timeoutMs: 30_000 }, // about "eventually": 10 s was exceeded at load 35
  );
  update();
}

/** Knative's part: the Service's revision is ready and routable. */
export function knativeReady(api: FakeKubeApi, name: string): void {
  api.setStatus('serving.knative.dev/v1', 'Service', NS, name, {
    observedGeneration: api.get('serving.knative.dev/v1', 'Service', NS, name)!.metadata.generation,
    url: `http://${name}.${NS}.svc.cluster.local`,
    conditions: [
      { type: 'ConfigurationsReady', status: 'True' },
      { type: 'Ready', status: 'True' },
      { type: 'RoutesReady', status: 'True' },
    ],
  });
}

/** Deploys an app function and plays Knative marking it Ready. */
export async function deployReady(r: Rig, spec: AppFunctionSpec, platform = r.platform) {
  const name = `cs-app-${spec.name}`;
  const [instance] = await Promise.all([platform.deployAppFunction(spec), whenWatched(r.api, KSVC, name, () => knativeReady(r.api, name))]);
  return instance;
}
