/**
 * The Kubernetes platform: executors as Deployments with device limits pinned to their node, app
 * functions as Knative Services, server-side apply, watched readiness and failures, reconcile on restart.
 *
 * @example
 * ```ts
 * import { KubeConfig } from '@kubernetes/client-node';
 * import { KubernetesPlatform, kubernetesOptionsFromEnv } from './control/platform/kubernetes/index.js';
 * const kc = new KubeConfig();
 * kc.loadFromDefault(); // in a pod: the service account
 * const platform = new KubernetesPlatform(kubernetesOptionsFromEnv(process.env, kc));
 * const nodes = await platform.listNodes();
 * ```
 */
export { KubernetesPlatform, knativeReady, deploymentReady } from './platform.js';
export { kubernetesOptionsFromEnv, manifestOptionsFromEnv, withDefaults, MANIFEST_DEFAULTS, type KubernetesPlatformOptions, type KubernetesPlatformInit, type ManifestOptions, type AutoscalingOptions } from './options.js';
export { renderAppManifests, appFunctionUrl, executorDeployment, executorService, appConfigMap, appKnativeService, imageRef, executorUrl, DEFAULT_APP_LAUNCH, APP_ENV, APP_SOURCE_DIR, APP_SOURCE_FILE, type RenderAppOptions } from './manifests.js';
export { gpuNodes, type KubeNodeDevices } from './discovery.js';
export { planReconcile, desiredStateFromStore, type DesiredState, type DesiredResolvers, type ReconcileReport } from './reconcile.js';
export { executorObjectName, appObjectName, appSourceConfigMapName, LABEL, ANNOTATION } from './names.js';
export * from './errors.js';
