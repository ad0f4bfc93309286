import test from 'ava';
import { parseAllDocuments } from 'yaml';
import {
  appConfigMap, appFunctionUrl, appKnativeService, executorDeployment, executorService, imageRef, renderAppManifests,
} from '../../../../../control/platform/kubernetes/manifests.js';
import { MANIFEST_DEFAULTS, type ManifestOptions } from '../../../../../control/platform/kubernetes/options.js';
import { EXECUTOR_ENV } from '../../../../../lib/descriptor.js';
import type { AppFunctionSpec, ExecutorSpec } from '../../../../../lib/platform.js';
import { validateManifest } from '../../../../helpers/kube-models.js';

const opts: ManifestOptions = {
  ...MANIFEST_DEFAULTS,
  storeUrl: 'redis://redis.cornserve.svc.cluster.local:6379',
  dispatcherUrl: 'http://dispatcher.cornserve.svc.cluster.local:8000',
  passEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317' },
};

const executor: ExecutorSpec = {
  executorId: 'encodertask-3f2a9c0d41be-1',
  taskId: 'encodertask-3f2a9c0d41be',
  node: 'gpu-b',
  devices: [
    { node: 'gpu-b', globalRank: 4, localRank: 0 },
    { node: 'gpu-b', globalRank: 5, localRank: 1 },
  ],
  launch: { kind: 'eric', entry: 'executors/eric/main.ts', image: 'cornserve/eric', args: ['--model', 'tiny-vision'], devicesPerExecutor: 2, healthPath: '/healthz' },
  env: { EXTRA: '1' },
};

const app: AppFunctionSpec = {
  appId: 'app-0123456789abcdef0123456789abcdef',
  name: 'mllm',
  source: "export default defineApp({ name: 'mllm' });\n",
  launch: { kind: 'app-runtime', entry: 'functions/runtime/main.ts', image: 'cornserve/app-runtime', args: [], devicesPerExecutor: 0 },
  env: { CORNSERVE_ADMIN_HINT: 'x' },
};

const container = (spec = executor) => executorDeployment(spec, opts).spec!.template.spec!.containers[0]!;
const envOf = (c: { env?: Array<{ name: string; value?: string }> }) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));

test('the executor Deployment and Service validate against the Kubernetes schemas', (t) => {
  t.notThrows(() => validateManifest(executorDeployment(executor, opts)));
  t.notThrows(() => validateManifest(executorService(executor, opts)));
});

test('an executor asks for one nvidia.com/gpu per device', (t) => {
  t.deepEqual(container().resources, { limits: { 'nvidia.com/gpu': '2' } });
});

test("an executor's GPU ordinals are 0..N-1, the container's visible devices, whatever its node-local ranks", (t) => {
  const onLaterGpus = { ...executor, devices: [{ node: 'gpu-b', globalRank: 6, localRank: 2 }, { node: 'gpu-b', globalRank: 7, localRank: 3 }] };
  const c = container(onLaterGpus);
  t.deepEqual(c.resources, { limits: { 'nvidia.com/gpu': '2' } });
  t.like(envOf(c), { [EXECUTOR_ENV.deviceKind]: 'cuda', [EXECUTOR_ENV.deviceOrdinals]: '0,1', [EXECUTOR_ENV.ranks]: '6,7' });
});

test('an executor is pinned to the node its devices are on', (t) => {
  const affinity = executorDeployment(executor, opts).spec!.template.spec!.affinity!;
  t.deepEqual(affinity.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms, [
    { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-b'] }] },
  ]);
});

test('an executor gets every EXECUTOR_ENV variable', (t) => {
  const env = envOf(container());
  t.like(env, {
    [EXECUTOR_ENV.executorId]: executor.executorId,
    [EXECUTOR_ENV.taskId]: executor.taskId,
    [EXECUTOR_ENV.port]: '8000',
    [EXECUTOR_ENV.ranks]: '4,5',
    [EXECUTOR_ENV.node]: 'gpu-b',
    [EXECUTOR_ENV.sidecar]: 'unix:/dev/shm/cornserve-sidecar.sock',
    [EXECUTOR_ENV.store]: opts.storeUrl,
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317',
    EXTRA: '1',
  });
});

test('an executor listens on the pod address, after its own args', (t) => {
  t.deepEqual(container().args, ['--model', 'tiny-vision', '--host', '0.0.0.0']);
  t.is(envOf(container()).HOST, '0.0.0.0');
});

test("the readiness probe polls the launch spec's health path", (t) => {
  t.deepEqual(container().readinessProbe!.httpGet, { path: '/healthz', port: 'http' });
});

test("an executor shares host IPC and the host's /dev/shm (shared memory and socket) with the node sidecar", (t) => {
  const pod = executorDeployment(executor, opts).spec!.template.spec!;
  t.true(pod.hostIPC);
  t.deepEqual(pod.volumes, [{ name: 'dshm', hostPath: { path: '/dev/shm', type: 'Directory' } }]);
  t.deepEqual(container().volumeMounts, [{ name: 'dshm', mountPath: '/dev/shm' }]);
});

test('executor objects carry the managed-by, task-id and executor-id labels', (t) => {
  for (const o of [executorDeployment(executor, opts), executorService(executor, opts)])
    t.like(o.metadata!.labels, {
      'app.kubernetes.io/managed-by': 'cornserve',
      'cornserve.ai/task-id': executor.taskId,
      'cornserve.ai/executor-id': executor.executorId,
    });
});

test('one replica, replaced by Recreate, so two pods never hold the same devices', (t) => {
  const d = executorDeployment(executor, opts).spec!;
  t.is(d.replicas, 1);
  t.deepEqual(d.strategy, { type: 'Recreate' });
});

test('devices on another node are refused with KUBE_INVALID_SPEC', (t) => {
  const bad = { ...executor, devices: [...executor.devices, { node: 'gpu-c', globalRank: 9, localRank: 0 }] };
  const err = t.throws(() => executorDeployment(bad, opts), { message: /devices 9 are not on node gpu-b/ }) as { code?: string };
  t.is(err.code, 'KUBE_INVALID_SPEC');
});

test('an executor without devices has no device limits', (t) => {
  t.is(container({ ...executor, devices: [] }).resources, undefined);
});

test('image names get the registry prefix and tag unless they carry their own', (t) => {
  const o = { imagePrefix: 'registry.local:5000', imageTag: 'v1' };
  t.is(imageRef('cornserve/echo', o), 'registry.local:5000/cornserve/echo:v1');
  t.is(imageRef('cornserve/echo:dev', o), 'registry.local:5000/cornserve/echo:dev');
  t.is(imageRef('ghcr.io/acme/echo', o), 'ghcr.io/acme/echo:v1');
  t.is(imageRef('ghcr.io/acme/echo@sha256:abc', o), 'ghcr.io/acme/echo@sha256:abc');
  t.is(imageRef('cornserve/echo', { imagePrefix: '', imageTag: 'latest' }), 'cornserve/echo:latest');
});

test('the app ConfigMap and Knative Service validate against the Kubernetes and Knative schemas', (t) => {
  t.notThrows(() => validateManifest(appConfigMap(app, opts)));
  t.notThrows(() => validateManifest(appKnativeService(app, opts)));
});

test('an app function autoscales on concurrency and scales to zero', (t) => {
  const ann = appKnativeService(app, { ...opts, autoscaling: { target: 4, minScale: 0, maxScale: 7 } }).spec!.template!.metadata!.annotations!;
  t.like(ann, {
    'autoscaling.knative.dev/metric': 'concurrency',
    'autoscaling.knative.dev/target': '4',
    'autoscaling.knative.dev/min-scale': '0',
    'autoscaling.knative.dev/max-scale': '7',
  });
});

test('the app source is mounted from its ConfigMap at the path CORNSERVE_APP_SOURCE names', (t) => {
  const cm = appConfigMap(app, opts);
  const spec = appKnativeService(app, opts).spec!.template!.spec!;
  const c = spec.containers[0]!;
  t.is(cm.data!['app.ts'], app.source);
  t.deepEqual(spec.volumes, [{ name: 'app-source', configMap: { name: cm.metadata!.name! } }]);
  t.deepEqual(c.volumeMounts, [{ name: 'app-source', mountPath: '/etc/cornserve/app', readOnly: true }]);
  t.is(envOf(c).CORNSERVE_APP_SOURCE, '/etc/cornserve/app/app.ts');
});

test('an app function gets the dispatcher and Store URLs and its id', (t) => {
  t.like(envOf(appKnativeService(app, opts).spec!.template!.spec!.containers[0]!), {
    CORNSERVE_DISPATCHER_URL: opts.dispatcherUrl,
    CORNSERVE_STORE_URL: opts.storeUrl,
    CORNSERVE_APP_ID: app.appId,
    CORNSERVE_APP_NAME: 'mllm',
    CORNSERVE_ADMIN_HINT: 'x',
    CORNSERVE_HOST: '0.0.0.0',
  });
});

test('an app function never sets PORT (Knative owns it)', (t) => {
  const withPort = { ...app, env: { PORT: '9999' } };
  t.false((appKnativeService(withPort, opts).spec!.template!.spec!.containers[0]!.env ?? []).some((e) => e.name === 'PORT'));
});

test('a changed source makes a new revision (the template hash changes)', (t) => {
  const a = appKnativeService(app, opts).spec!.template!.metadata!.annotations!['cornserve.ai/source-sha256'];
  const b = appKnativeService({ ...app, source: app.source + '// v2\n' }, opts).spec!.template!.metadata!.annotations!['cornserve.ai/source-sha256'];
  t.not(a, b);
});

test('renderAppManifests prints a ConfigMap and a Knative Service that validate', (t) => {
  const docs = parseAllDocuments(renderAppManifests('echo', 'export default 1;\n')).map((d) => d.toJS());
  t.deepEqual(docs.map((d) => `${d.apiVersion}/${d.kind}`), ['v1/ConfigMap', 'serving.knative.dev/v1/Service']);
  for (const d of docs) t.notThrows(() => validateManifest(d));
});

test('renderAppManifests shows the URL of the app function\'s own Knative route', (t) => {
  const text = renderAppManifests('echo', 'x', { namespace: 'team-a' });
  t.is(appFunctionUrl('echo', { namespace: 'team-a' }), 'http://cs-app-echo.team-a.svc.cluster.local');
  t.true(text.startsWith('# The app function\'s own route (Knative, cluster-local; no gateway): POST http://cs-app-echo.team-a.svc.cluster.local/invoke'));
  const service = parseAllDocuments(text).map((d) => d.toJS())[1];
  t.is(`http://${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`, appFunctionUrl('echo', { namespace: 'team-a' }));
});

test('renderAppManifests renders the same text for the same input', (t) => {
  t.is(renderAppManifests('echo', 'x', { namespace: 'team-a' }), renderAppManifests('echo', 'x', { namespace: 'team-a' }));
});

test('manifests rendered by hand (no app id) are not labelled as the platform\'s own', (t) => {
  const docs = parseAllDocuments(renderAppManifests('echo', 'x')).map((d) => d.toJS());
  for (const d of docs) t.is(d.metadata.labels['app.kubernetes.io/managed-by'], undefined);
});

test('a models PVC is mounted read-only at /models in every executor, CORNSERVE_MODELS points there, and the Deployment validates', (t) => {
  const d = executorDeployment(executor, { ...opts, modelsVolume: { pvc: 'hf-models' } });
  t.notThrows(() => validateManifest(d));
  const pod = d.spec!.template.spec!;
  t.deepEqual(pod.volumes!.find((v) => v.name === 'models'), { name: 'models', persistentVolumeClaim: { claimName: 'hf-models', readOnly: true } });
  t.deepEqual(pod.containers[0]!.volumeMounts!.find((m) => m.name === 'models'), { name: 'models', mountPath: '/models', readOnly: true });
  t.is(envOf(pod.containers[0]!).CORNSERVE_MODELS, '/models');
});

test('a models hostPath is mounted as a Directory volume, and the Deployment validates', (t) => {
  const d = executorDeployment(executor, { ...opts, modelsVolume: { hostPath: '/data/models' } });
  t.notThrows(() => validateManifest(d));
  t.deepEqual(d.spec!.template.spec!.volumes!.find((v) => v.name === 'models'), { name: 'models', hostPath: { path: '/data/models', type: 'Directory' } });
});

test('without a models volume executors mount none and get no CORNSERVE_MODELS', (t) => {
  const pod = executorDeployment(executor, opts).spec!.template.spec!;
  t.falsy(pod.volumes!.find((v) => v.name === 'models'));
  t.false('CORNSERVE_MODELS' in envOf(pod.containers[0]!));
});
