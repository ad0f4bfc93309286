/**
 * Options of the Kubernetes platform: the user-facing shape with documented defaults, `withDefaults()`,
 * and `kubernetesOptionsFromEnv()` which reads the same names the `cornserve-config` ConfigMap in
 * knative/base/config.yaml sets (the only place these environment variables are read).
 */
import { z } from 'zod';
import type { KubeConfig } from '@kubernetes/client-node';

export interface AutoscalingOptions {
  /** Concurrent requests per app-function pod the Knative autoscaler aims for. @default 8 */
  target: number;
  /** @default 0 (scale to zero) */
  minScale: number;
  /** @default 10 */
  maxScale: number;
}

/** Everything the manifest builders need (pure data, no client). */
export interface ManifestOptions {
  /** @default 'cornserve' */
  namespace: string;
  /** Registry put in front of image names without one (LaunchSpec.image is e.g. 'cornserve/echo'). '' = none. @default 'docker.io' */
  imagePrefix: string;
  /** Tag for images without one. @default 'latest' */
  imageTag: string;
  /** @default 'IfNotPresent' */
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Extended resource that counts devices on a node and in executor limits. @default 'nvidia.com/gpu' */
  deviceResource: string;
  /** What `deviceResource` counts, for the executors (CORNSERVE_DEVICE_KIND). @default 'cuda' */
  deviceKind: 'cpu' | 'cuda';
  /** Port executors listen on (env PORT). @default 8000 */
  executorPort: number;
  /** HTTP port (/health, /info) of each node's sidecar, a hostNetwork DaemonSet; peers use the next port. @default 10000 */
  sidecarPort: number;
  /** Unix socket of the node's sidecar, in the host's /dev/shm shared with executors (CORNSERVE_SIDECAR_URL = unix:<path>). @default '/dev/shm/cornserve-sidecar.sock' */
  sidecarSocket: string;
  /** Appended to every executor's args so it listens on the pod IP, not loopback. @default ['--host', '0.0.0.0'] */
  executorBindArgs: string[];
  /** Redis URL handed to executors and app functions (CORNSERVE_STORE_URL). */
  storeUrl?: string | undefined;
  /** Dispatcher URL handed to app functions (CORNSERVE_DISPATCHER_URL). */
  dispatcherUrl?: string | undefined;
  /** @default 'cluster.local' */
  clusterDomain: string;
  /** @default 'cornserve-executor' */
  executorServiceAccount: string;
  /** @default 'cornserve-app-function' */
  appServiceAccount: string;
  /** Seconds an executor pod gets between SIGTERM and SIGKILL when Kubernetes stops it. @default 30 */
  terminationGraceSeconds: number;
  /** Knative request timeout of app functions. @default 300 */
  appTimeoutSeconds: number;
  autoscaling: AutoscalingOptions;
  /** Extra environment for every executor and app function (OTEL_* pass through here). @default {} */
  passEnv: Record<string, string>;
  /**
   * Where model folders come from: a PersistentVolumeClaim or a node path, mounted read-only into every executor
   * at MODELS_MOUNT_PATH with CORNSERVE_MODELS pointing there (a task's modelId names a folder in it). None: the
   * images' built-in models only.
   */
  modelsVolume?: ModelsVolume | undefined;
}

export type ModelsVolume = { pvc: string } | { hostPath: string };

/** Where executors see the models volume (their CORNSERVE_MODELS). */
export const MODELS_MOUNT_PATH = '/models';

export interface KubernetesPlatformOptions extends ManifestOptions {
  kubeConfig: KubeConfig;
  /** Field manager for server-side apply. @default 'cornserve' */
  fieldManager: string;
  /** Bound on waiting for an app function's Knative Service to become Ready. @default 300000 */
  readyTimeoutMs: number;
  /** Extra time, beyond the grace period, stopExecutor waits for pods to disappear. @default 30000 */
  stopSlackMs: number;
  /** Poll interval while waiting for pods to disappear. @default 250 */
  pollIntervalMs: number;
  /** Delay before a broken watch is re-established. @default 1000 */
  watchRetryMs: number;
  /**
   * What shutdown() does with the cluster objects: 'detach' (default) leaves executors and app functions
   * running, so a restarted resource manager adopts them with reconcile(); 'delete' removes what this
   * process started (a developer's `cornserve up --platform kubernetes` from a laptop).
   */
  onShutdown: 'detach' | 'delete';
}

export const MANIFEST_DEFAULTS: ManifestOptions = {
  namespace: 'cornserve',
  imagePrefix: 'docker.io',
  imageTag: 'latest',
  imagePullPolicy: 'IfNotPresent',
  deviceResource: 'nvidia.com/gpu',
  deviceKind: 'cuda',
  executorPort: 8000,
  sidecarPort: 10000,
  sidecarSocket: '/dev/shm/cornserve-sidecar.sock',
  executorBindArgs: ['--host', '0.0.0.0'],
  clusterDomain: 'cluster.local',
  executorServiceAccount: 'cornserve-executor',
  appServiceAccount: 'cornserve-app-function',
  terminationGraceSeconds: 30,
  appTimeoutSeconds: 300,
  autoscaling: { target: 8, minScale: 0, maxScale: 10 },
  passEnv: {},
};

const PLATFORM_DEFAULTS = {
  fieldManager: 'cornserve',
  readyTimeoutMs: 300_000,
  stopSlackMs: 30_000,
  pollIntervalMs: 250,
  watchRetryMs: 1000,
  onShutdown: 'detach' as const,
};

export type KubernetesPlatformInit = Partial<Omit<KubernetesPlatformOptions, 'autoscaling'>> & {
  kubeConfig: KubeConfig;
  autoscaling?: Partial<AutoscalingOptions>;
};

export function withDefaults(init: KubernetesPlatformInit): KubernetesPlatformOptions {
  const defined = Object.fromEntries(Object.entries(init).filter(([, v]) => v !== undefined));
  return {
    ...MANIFEST_DEFAULTS,
    ...PLATFORM_DEFAULTS,
    ...defined,
    autoscaling: { ...MANIFEST_DEFAULTS.autoscaling, ...init.autoscaling },
  } as KubernetesPlatformOptions;
}

const int = (min: number) => z.coerce.number().int().min(min);

/** The environment variables (set by the `cornserve-config` ConfigMap) and the option each one feeds. */
const envSchema = z.object({
  CORNSERVE_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).optional(),
  CORNSERVE_IMAGE_PREFIX: z.string().optional(),
  CORNSERVE_IMAGE_TAG: z.string().min(1).optional(),
  CORNSERVE_IMAGE_PULL_POLICY: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  CORNSERVE_DEVICE_RESOURCE: z.string().min(1).optional(),
  CORNSERVE_STORE_URL: z.url().optional(),
  CORNSERVE_DISPATCHER_URL: z.url().optional(),
  CORNSERVE_SIDECAR_PORT: int(1).optional(),
  CORNSERVE_CLUSTER_DOMAIN: z.string().min(1).optional(),
  CORNSERVE_APP_CONCURRENCY_TARGET: int(1).optional(),
  CORNSERVE_APP_MIN_SCALE: int(0).optional(),
  CORNSERVE_APP_MAX_SCALE: int(1).optional(),
  CORNSERVE_MODELS_PVC: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a PersistentVolumeClaim name').optional(),
  CORNSERVE_MODELS_HOST_PATH: z.string().startsWith('/', 'an absolute path on the nodes').optional(),
}).refine((e) => !(e.CORNSERVE_MODELS_PVC && e.CORNSERVE_MODELS_HOST_PATH), {
  message: 'set CORNSERVE_MODELS_PVC or CORNSERVE_MODELS_HOST_PATH, not both', path: ['CORNSERVE_MODELS_PVC'],
});

/**
 * Manifest options from the environment (in a cluster: the ConfigMap via envFrom; for `cornserve manifests`:
 * the user's shell). OTEL_* variables are passed through to executors and app functions. Throws a zod error
 * naming each bad variable.
 */
export function manifestOptionsFromEnv(env: NodeJS.ProcessEnv): ManifestOptions {
  const e = envSchema.parse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')));
  const passEnv = Object.fromEntries(Object.entries(env).filter((kv): kv is [string, string] => kv[0].startsWith('OTEL_') && !!kv[1]));
  const picked: Partial<ManifestOptions> = {
    namespace: e.CORNSERVE_NAMESPACE,
    imagePrefix: e.CORNSERVE_IMAGE_PREFIX,
    imageTag: e.CORNSERVE_IMAGE_TAG,
    imagePullPolicy: e.CORNSERVE_IMAGE_PULL_POLICY,
    deviceResource: e.CORNSERVE_DEVICE_RESOURCE,
    storeUrl: e.CORNSERVE_STORE_URL,
    dispatcherUrl: e.CORNSERVE_DISPATCHER_URL,
    sidecarPort: e.CORNSERVE_SIDECAR_PORT,
    clusterDomain: e.CORNSERVE_CLUSTER_DOMAIN,
    passEnv,
    modelsVolume: e.CORNSERVE_MODELS_PVC ? { pvc: e.CORNSERVE_MODELS_PVC }
      : e.CORNSERVE_MODELS_HOST_PATH ? { hostPath: e.CORNSERVE_MODELS_HOST_PATH } : undefined,
  };
  return {
    ...MANIFEST_DEFAULTS,
    ...Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)),
    autoscaling: {
      target: e.CORNSERVE_APP_CONCURRENCY_TARGET ?? MANIFEST_DEFAULTS.autoscaling.target,
      minScale: e.CORNSERVE_APP_MIN_SCALE ?? MANIFEST_DEFAULTS.autoscaling.minScale,
      maxScale: e.CORNSERVE_APP_MAX_SCALE ?? MANIFEST_DEFAULTS.autoscaling.maxScale,
    },
  };
}

/** Platform options from the environment (see manifestOptionsFromEnv) plus the cluster to talk to. */
export function kubernetesOptionsFromEnv(env: NodeJS.ProcessEnv, kubeConfig: KubeConfig): KubernetesPlatformOptions {
  return withDefaults({ ...manifestOptionsFromEnv(env), kubeConfig });
}
