/**
 * Pure manifest builders: the objects the Kubernetes platform applies, built from the platform specs and
 * options alone (no clock, no randomness), so applying the same spec twice sends the same bytes.
 *
 *  - an executor = a Deployment (replicas 1, strategy Recreate) + a ClusterIP Service, pinned to its node
 *    with a required node affinity on the node's name, `nvidia.com/gpu` limits = its devices, the
 *    EXECUTOR_ENV variables, a readiness probe on the launch spec's health path, host IPC and /dev/shm
 *    (shared memory with the node's sidecar, and its unix socket);
 *  - an app function = a ConfigMap holding the app's source + a Knative Service (serving.knative.dev/v1)
 *    that mounts it (CORNSERVE_APP_SOURCE = the file path), autoscales on concurrency and scales to zero.
 *
 * `renderAppManifests()` prints the app-function objects as YAML (the `cornserve manifests APP.ts` command).
 */
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IService as IKnativeService } from '@kubernetes-models/knative/serving.knative.dev/v1/Service';
import { EXECUTOR_ENV, type LaunchSpec } from '../../../lib/descriptor.js';
import type { AppFunctionSpec, ExecutorSpec } from '../../../lib/platform.js';
import { InvalidSpecError } from './errors.js';
import { ANNOTATION, LABEL, MANAGED_BY, appObjectName, appSourceConfigMapName, executorObjectName, labelValue } from './names.js';
import { MANIFEST_DEFAULTS, MODELS_MOUNT_PATH, type AutoscalingOptions, type ManifestOptions, type ModelsVolume } from './options.js';
import { MODELS_ENV } from '../../../executors/models/model-dirs.js';

export type { IDeployment, IConfigMap, IService, IKnativeService };

/** Where the app's source file is mounted inside the app-function container. */
export const APP_SOURCE_DIR = '/etc/cornserve/app';
export const APP_SOURCE_FILE = 'app.ts';
/** Environment of app functions (beyond CORNSERVE_DISPATCHER_URL and CORNSERVE_STORE_URL). */
export const APP_ENV = { source: 'CORNSERVE_APP_SOURCE', appId: 'CORNSERVE_APP_ID', appName: 'CORNSERVE_APP_NAME', dispatcher: 'CORNSERVE_DISPATCHER_URL' } as const;
/** The runtime's bind address variable (functions/runtime/main.ts). */
const APP_HOST_ENV = 'CORNSERVE_HOST';

/** The app-runtime launch spec used when rendering manifests for the CLI. */
export const DEFAULT_APP_LAUNCH: LaunchSpec = {
  kind: 'app-runtime',
  entry: 'functions/runtime/main.ts',
  image: 'cornserve/app-runtime',
  args: [],
  devicesPerExecutor: 0,
  healthPath: '/health',
};

/** `cornserve/echo` → `docker.io/cornserve/echo:latest`; names that carry a registry, tag or digest keep them. */
export function imageRef(image: string, o: Pick<ManifestOptions, 'imagePrefix' | 'imageTag'>): string {
  const first = image.split('/')[0]!;
  const hasRegistry = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  const last = image.split('/').pop()!;
  const hasTag = last.includes(':') || image.includes('@');
  const withRegistry = hasRegistry || !o.imagePrefix ? image : `${o.imagePrefix.replace(/\/$/, '')}/${image}`;
  return hasTag ? withRegistry : `${withRegistry}:${o.imageTag}`;
}

/** name → value pairs in order; a later pair with the same name replaces the earlier one in place. */
function envList(...groups: Array<Array<IEnvVar> | Record<string, string> | undefined>): IEnvVar[] {
  const out = new Map<string, IEnvVar>();
  for (const g of groups) {
    if (!g) continue;
    const vars = Array.isArray(g) ? g : Object.entries(g).map(([name, value]) => ({ name, value }));
    for (const v of vars) out.set(v.name, v);
  }
  return [...out.values()];
}

const commonLabels = (component: 'executor' | 'app-function') => ({
  [LABEL.managedBy]: MANAGED_BY,
  [LABEL.partOf]: 'cornserve',
  [LABEL.component]: component,
});

export const serviceUrl = (name: string, o: Pick<ManifestOptions, 'namespace' | 'clusterDomain'>, port?: number) =>
  `http://${name}.${o.namespace}.svc.${o.clusterDomain}${port === undefined ? '' : `:${port}`}`;

/** The URL the executor's API is reached at, in the cluster (its Service). */
export const executorUrl = (executorId: string, o: Pick<ManifestOptions, 'namespace' | 'clusterDomain' | 'executorPort'>) =>
  serviceUrl(executorObjectName(executorId), o, o.executorPort);

export function executorLabels(spec: Pick<ExecutorSpec, 'executorId' | 'taskId' | 'launch'>): Record<string, string> {
  return {
    ...commonLabels('executor'),
    [LABEL.name]: labelValue(spec.launch.kind),
    [LABEL.taskId]: labelValue(spec.taskId),
    [LABEL.executorId]: labelValue(spec.executorId),
  };
}

function checkExecutorSpec(spec: ExecutorSpec): void {
  const elsewhere = spec.devices.filter((d) => d.node !== spec.node);
  if (elsewhere.length)
    throw new InvalidSpecError(`executor ${spec.executorId}: devices ${elsewhere.map((d) => d.globalRank).join(',')} are not on node ${spec.node}`);
  if (!spec.node) throw new InvalidSpecError(`executor ${spec.executorId}: no node`);
}

/** The pod volume the models come from (read-only: executors never write model folders). */
function modelsVolumeSource(v: ModelsVolume) {
  return 'pvc' in v
    ? { name: 'models', persistentVolumeClaim: { claimName: v.pvc, readOnly: true } }
    : { name: 'models', hostPath: { path: v.hostPath, type: 'Directory' as const } };
}

export function executorDeployment(spec: ExecutorSpec, o: ManifestOptions = MANIFEST_DEFAULTS): IDeployment {
  checkExecutorSpec(spec);
  const name = executorObjectName(spec.executorId);
  const labels = executorLabels(spec);
  const selector = { [LABEL.executorId]: labels[LABEL.executorId]! };
  const annotations = {
    [ANNOTATION.executorId]: spec.executorId,
    [ANNOTATION.taskId]: spec.taskId,
    [ANNOTATION.node]: spec.node,
    [ANNOTATION.devices]: JSON.stringify(spec.devices),
  };
  const env = envList(
    [
      { name: EXECUTOR_ENV.executorId, value: spec.executorId },
      { name: EXECUTOR_ENV.taskId, value: spec.taskId },
      { name: EXECUTOR_ENV.port, value: String(o.executorPort) },
      { name: 'HOST', value: '0.0.0.0' },
      { name: EXECUTOR_ENV.ranks, value: spec.devices.map((d) => d.globalRank).join(',') },
      { name: EXECUTOR_ENV.node, value: spec.node },
      // The container sees its `deviceResource: N` GPUs as ordinals 0..N-1 (the device plugin sets
      // NVIDIA_VISIBLE_DEVICES; CUDA_VISIBLE_DEVICES semantics), whatever the node-local ranks are.
      { name: EXECUTOR_ENV.deviceKind, value: o.deviceKind },
      { name: EXECUTOR_ENV.deviceOrdinals, value: spec.devices.map((_, i) => i).join(',') },
      { name: EXECUTOR_ENV.sidecar, value: `unix:${o.sidecarSocket}` },
      ...(o.storeUrl ? [{ name: EXECUTOR_ENV.store, value: o.storeUrl }] : []),
      ...(o.modelsVolume ? [{ name: MODELS_ENV, value: MODELS_MOUNT_PATH }] : []),
    ],
    o.passEnv,
    spec.launch.env,
    spec.env,
  );
  const devices = spec.devices.length;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: o.namespace, labels, annotations },
    spec: {
      replicas: 1,
      // Never two pods holding the same devices: the old pod is gone before the new one starts.
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selector },
      template: {
        metadata: { labels, annotations },
        spec: {
          serviceAccountName: o.executorServiceAccount,
          automountServiceAccountToken: false,
          // Shared memory with the node's sidecar (tensors move through /dev/shm).
          hostIPC: true,
          terminationGracePeriodSeconds: o.terminationGraceSeconds,
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [spec.node] }] }],
              },
            },
          },
          tolerations: [{ key: o.deviceResource, operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'executor',
              image: imageRef(spec.launch.image, o),
              imagePullPolicy: o.imagePullPolicy,
              args: [...spec.launch.args, ...o.executorBindArgs],
              env,
              ports: [{ name: 'http', containerPort: o.executorPort, protocol: 'TCP' }],
              ...(devices > 0 ? { resources: { limits: { [o.deviceResource]: String(devices) } } } : {}),
              readinessProbe: {
                httpGet: { path: spec.launch.healthPath ?? '/health', port: 'http' },
                periodSeconds: 2,
                failureThreshold: 3,
              },
              // The node's /dev/shm: the sidecar's shared memory and its unix socket (a world-writable tmpfs,
              // so the non-root sidecar can create the socket there).
              volumeMounts: [
                { name: 'dshm', mountPath: '/dev/shm' },
                ...(o.modelsVolume ? [{ name: 'models', mountPath: MODELS_MOUNT_PATH, readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            { name: 'dshm', hostPath: { path: '/dev/shm', type: 'Directory' } },
            ...(o.modelsVolume ? [modelsVolumeSource(o.modelsVolume)] : []),
          ],
        },
      },
    },
  };
}

export function executorService(spec: ExecutorSpec, o: ManifestOptions = MANIFEST_DEFAULTS): IService {
  const labels = executorLabels(spec);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: executorObjectName(spec.executorId),
      namespace: o.namespace,
      labels,
      annotations: { [ANNOTATION.executorId]: spec.executorId, [ANNOTATION.taskId]: spec.taskId },
    },
    spec: {
      type: 'ClusterIP',
      selector: { [LABEL.executorId]: labels[LABEL.executorId]! },
      ports: [{ name: 'http', port: o.executorPort, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

export interface AppManifestInput {
  /** The gateway's app id; absent when rendering for `kubectl apply` by hand. */
  appId?: string;
  name: string;
  source: string;
  launch: LaunchSpec;
  env?: Record<string, string>;
}

const sourceHash = (source: string) => createHash('sha256').update(source).digest('hex');

function appLabels(app: AppManifestInput): Record<string, string> {
  return {
    // Objects rendered for `kubectl apply` by hand are not the platform's: reconcile() must never delete them.
    ...(app.appId ? commonLabels('app-function') : { [LABEL.partOf]: 'cornserve', [LABEL.component]: 'app-function' }),
    [LABEL.appName]: labelValue(app.name),
    ...(app.appId ? { [LABEL.appId]: labelValue(app.appId) } : {}),
  };
}

export function appConfigMap(app: AppManifestInput, o: ManifestOptions = MANIFEST_DEFAULTS): IConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: appSourceConfigMapName(app.name),
      namespace: o.namespace,
      labels: appLabels(app),
      ...(app.appId ? { annotations: { [ANNOTATION.appId]: app.appId } } : {}),
    },
    data: { [APP_SOURCE_FILE]: app.source },
  };
}

export function appKnativeService(app: AppManifestInput, o: ManifestOptions = MANIFEST_DEFAULTS): IKnativeService {
  const labels = appLabels(app);
  const a: AutoscalingOptions = o.autoscaling;
  const env = envList(
    [
      { name: APP_ENV.source, value: `${APP_SOURCE_DIR}/${APP_SOURCE_FILE}` },
      { name: APP_ENV.appName, value: app.name },
      { name: APP_HOST_ENV, value: '0.0.0.0' },
      ...(app.appId ? [{ name: APP_ENV.appId, value: app.appId }] : []),
      ...(o.dispatcherUrl ? [{ name: APP_ENV.dispatcher, value: o.dispatcherUrl }] : []),
      ...(o.storeUrl ? [{ name: EXECUTOR_ENV.store, value: o.storeUrl }] : []),
      ...(o.modelsVolume ? [{ name: MODELS_ENV, value: MODELS_MOUNT_PATH }] : []),
    ],
    o.passEnv,
    app.launch.env,
    app.env,
  ).filter((v) => v.name !== 'PORT'); // Knative owns PORT
  return {
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    metadata: {
      name: appObjectName(app.name),
      namespace: o.namespace,
      // The gateway is the public entry; app functions are reachable inside the cluster only.
      labels: { ...labels, 'networking.knative.dev/visibility': 'cluster-local' },
      ...(app.appId ? { annotations: { [ANNOTATION.appId]: app.appId } } : {}),
    },
    spec: {
      template: {
        metadata: {
          labels,
          annotations: {
            'autoscaling.knative.dev/metric': 'concurrency',
            'autoscaling.knative.dev/target': String(a.target),
            'autoscaling.knative.dev/min-scale': String(a.minScale),
            'autoscaling.knative.dev/max-scale': String(a.maxScale),
            // A ConfigMap change alone does not roll pods; a new hash makes a new revision.
            [ANNOTATION.sourceHash]: sourceHash(app.source),
          },
        },
        spec: {
          serviceAccountName: o.appServiceAccount,
          timeoutSeconds: o.appTimeoutSeconds,
          containers: [
            {
              name: 'app',
              image: imageRef(app.launch.image, o),
              imagePullPolicy: o.imagePullPolicy,
              ...(app.launch.args.length ? { args: [...app.launch.args] } : {}),
              env,
              readinessProbe: { httpGet: { path: app.launch.healthPath ?? '/health' } },
              volumeMounts: [{ name: 'app-source', mountPath: APP_SOURCE_DIR, readOnly: true }],
            },
          ],
          volumes: [{ name: 'app-source', configMap: { name: appSourceConfigMapName(app.name) } }],
        },
      },
    },
  };
}

/**
 * The app function's own route (its graphs run in process, so it needs none other): Knative gives every Service a URL; ours are `cluster-local`, so it is
 * `http://<service>.<namespace>.svc.cluster.local` (Knative's default cluster domain), where POST /invoke with
 * `{"request_data": ...}` calls the app with no gateway in the path.
 */
export function appFunctionUrl(appName: string, o: Pick<ManifestOptions, 'namespace'> = MANIFEST_DEFAULTS): string {
  return `http://${appObjectName(appName)}.${o.namespace}.svc.cluster.local`;
}

export interface RenderAppOptions extends Partial<Omit<ManifestOptions, 'autoscaling'>> {
  autoscaling?: Partial<AutoscalingOptions>;
  /** @default DEFAULT_APP_LAUNCH (image cornserve/app-runtime) */
  launch?: LaunchSpec;
  appId?: string;
  env?: Record<string, string>;
}

/**
 * The ConfigMap and Knative Service of one app as a YAML stream (two documents), for
 * `cornserve manifests APP.ts | kubectl apply -f -`. Deterministic: the same input renders the same text.
 * Without `appId` the objects carry no `managed-by: cornserve` label, so the platform's reconcile leaves them alone.
 */
export function renderAppManifests(appName: string, source: string, opts: RenderAppOptions = {}): string {
  const { autoscaling, launch, appId, env, ...rest } = opts;
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  const o: ManifestOptions = { ...MANIFEST_DEFAULTS, ...defined, autoscaling: { ...MANIFEST_DEFAULTS.autoscaling, ...autoscaling } };
  const app: AppManifestInput = { name: appName, source, launch: launch ?? DEFAULT_APP_LAUNCH, ...(appId ? { appId } : {}), ...(env ? { env } : {}) };
  const route = `# The app function's own route (Knative, cluster-local; no gateway): POST ${appFunctionUrl(appName, o)}/invoke  {"request_data": ...}\n`;
  return route + [appConfigMap(app, o), appKnativeService(app, o)].map((doc) => stringify(doc, { lineWidth: 0 })).join('---\n');
}
