/**
 * KubernetesPlatform: the Platform interface over a cluster.
 *  - executor = one Deployment (replicas 1) + one Service, pinned to the node its devices are on
 *    (see manifests.ts and docs/kubernetes.md for why one Deployment per executor);
 *  - app function = a ConfigMap (the source) + a Knative Service; deployAppFunction waits for Ready;
 *  - everything is written with server-side apply, so re-applying a spec is a no-op;
 *  - one pod watch (label managed-by=cornserve) turns container restarts, failed pods and pods deleted
 *    behind our back into `executor-exited` / `app-function-exited` events with expected=false;
 *  - reconcile(desired) adopts, recreates and deletes after a restart.
 */
import { logger } from '../../../lib/log.js';
import { sleep } from '../../../lib/wait.js';
import type { TaskDefinitionRecord, Unsubscribe } from '../../../lib/store.js';
import type { AppFunctionInstance, AppFunctionSpec, ExecutorInstance, ExecutorSpec, Platform, PlatformEvent } from '../../../lib/platform.js';
import { KubeClient, RESOURCE, type KubeObject } from './client.js';
import { gpuNodes, type KubeNodeDevices } from './discovery.js';
import { KubeShutDownError, NotReadyError } from './errors.js';
import {
  appConfigMap, appKnativeService, executorDeployment, executorService, executorUrl, serviceUrl,
} from './manifests.js';
import { ANNOTATION, LABEL, MANAGED_BY, appObjectName, executorObjectName, labelValue, managedSelector, sourceConfigMapOf } from './names.js';
import { withDefaults, type KubernetesPlatformInit, type KubernetesPlatformOptions } from './options.js';
import { lastExit, podFailed, podRestarts, podStuck } from './pod-status.js';
import { registryResources } from './registry-resources.js';
import { planReconcile, type DesiredState, type FoundExecutor, type ReconcileReport } from './reconcile.js';
import { informer, waitFor, type Informer, type Verdict } from './watch.js';

interface TrackedExecutor { instance: ExecutorInstance; stopping: boolean }
interface TrackedApp { appId: string; name: string; deleting: boolean }
interface PodMemo { restarts: number; failed: boolean }

/** Knative Service Ready condition (for the generation the spec is at). */
export function knativeReady(ksvc: KubeObject): Verdict {
  const st = ksvc.status ?? {};
  if ((st.observedGeneration ?? 0) < (ksvc.metadata.generation ?? 0)) return undefined;
  const ready = (st.conditions ?? []).find((c: { type?: string }) => c.type === 'Ready');
  if (ready?.status === 'True') return { done: true };
  if (ready?.status === 'False') return { failed: `${ready.reason ?? 'NotReady'}: ${ready.message ?? ''}`.trim() };
  return undefined;
}

/** Deployment rolled out with a ready pod; failed when Kubernetes gave up (progress deadline, replica failure). */
export function deploymentReady(d: KubeObject): Verdict {
  const st = d.status ?? {};
  const conditions: Array<{ type?: string; status?: string; reason?: string; message?: string }> = st.conditions ?? [];
  const failed = conditions.find((c) => (c.type === 'Progressing' && c.status === 'False') || (c.type === 'ReplicaFailure' && c.status === 'True'));
  if (failed) return { failed: `${failed.reason ?? failed.type}: ${failed.message ?? ''}`.trim() };
  if ((st.observedGeneration ?? 0) < (d.metadata.generation ?? 0)) return undefined;
  return (st.readyReplicas ?? 0) >= 1 && (st.updatedReplicas ?? 0) >= 1 ? { done: true } : undefined;
}

export class KubernetesPlatform implements Platform {
  readonly kind = 'kubernetes' as const;
  readonly options: KubernetesPlatformOptions;
  private readonly client: KubeClient;
  private readonly log = logger('platform-kubernetes');
  private readonly executors = new Map<string, TrackedExecutor>();
  private readonly apps = new Map<string, TrackedApp>();
  private readonly pods = new Map<string, PodMemo>();
  private readonly listeners = new Set<(e: PlatformEvent) => void>();
  private readonly podListeners = new Set<(pod: KubeObject) => void>();
  private podInformer: Informer | undefined;
  /** Aborted by shutdown(): ends every wait still in progress. */
  private readonly closing = new AbortController();
  private shutdownPromise: Promise<void> | undefined;

  constructor(init: KubernetesPlatformInit) {
    this.options = withDefaults(init);
    this.client = new KubeClient(this.options.kubeConfig, this.options.namespace, this.options.fieldManager);
  }

  // ---------- task registry (custom resources) ----------

  async storeTaskDefinition(record: TaskDefinitionRecord): Promise<void> {
    this.checkOpen();
    for (const obj of registryResources(record, this.options.namespace)) await this.client.apply(obj);
  }

  async removeTaskDefinition(name: string): Promise<void> {
    this.checkOpen();
    await this.client.delete(RESOURCE.taskDefinition, name);
    await this.client.delete(RESOURCE.executionDescriptor, name);
  }

  // ---------- nodes ----------

  async listNodes(): Promise<KubeNodeDevices[]> {
    const { items } = await this.client.list(RESOURCE.node);
    return gpuNodes(items, this.options.deviceResource, this.options.sidecarPort).map((n) => ({ ...n, deviceKind: this.options.deviceKind }));
  }

  // ---------- executors ----------

  async startExecutor(spec: ExecutorSpec): Promise<ExecutorInstance> {
    this.checkOpen();
    const deployment = executorDeployment(spec, this.options); // validates the spec before anything is sent
    await this.watchPods();
    await this.client.apply(executorService(spec, this.options));
    await this.client.apply(deployment);
    return this.trackExecutor(spec);
  }

  /** Records an executor as this platform's (started or adopted). */
  private trackExecutor(spec: ExecutorSpec): ExecutorInstance {
    const instance: ExecutorInstance = {
      executorId: spec.executorId,
      taskId: spec.taskId,
      url: executorUrl(spec.executorId, this.options),
      node: spec.node,
      devices: spec.devices,
    };
    this.executors.set(spec.executorId, { instance, stopping: false });
    return instance;
  }

  /**
   * Resolves once the executor's Deployment has a ready pod (its readiness probe on healthPath passes).
   * Fails fast when its pod is stuck (image cannot be pulled, missing config) or Kubernetes gives up.
   */
  async waitForExecutorReady(executorId: string, { timeoutMs = this.options.readyTimeoutMs } = {}): Promise<void> {
    const name = executorObjectName(executorId);
    const what = `executor ${executorId}`;
    const stuck = new AbortController();
    const onPod = (pod: KubeObject) => {
      if (pod.metadata.labels?.[LABEL.executorId] !== labelValue(executorId)) return;
      const reason = podStuck(pod);
      if (reason) stuck.abort(new NotReadyError(what, timeoutMs, `pod ${pod.metadata.name} is stuck: ${reason}`));
    };
    this.podListeners.add(onPod);
    try {
      await this.watchPods();
      const current = await this.client.get(RESOURCE.deployment, name);
      await waitFor(this.client, RESOURCE.deployment, name, current, deploymentReady, {
        timeoutMs,
        what,
        signal: AbortSignal.any([stuck.signal, this.closing.signal]),
      });
    } finally {
      this.podListeners.delete(onPod);
    }
  }

  async stopExecutor(executorId: string, { graceMs }: { graceMs?: number } = {}): Promise<void> {
    const tracked = this.executors.get(executorId);
    if (!tracked || tracked.stopping) return;
    tracked.stopping = true;
    try {
      await this.removeExecutorObjects({ name: executorObjectName(executorId), executorId, label: labelValue(executorId) }, graceMs);
    } finally {
      this.executors.delete(executorId);
    }
    this.emit({ kind: 'executor-exited', executorId, taskId: tracked.instance.taskId, code: null, signal: null, expected: true });
  }

  /**
   * Deployment first (so nothing recreates the pod), then its pods with the caller's grace period, then the
   * Service; resolves when no pod of the executor is left (bounded: grace + stopSlackMs).
   */
  private async removeExecutorObjects(found: FoundExecutor, graceMs?: number): Promise<void> {
    const graceSeconds = graceMs === undefined ? this.options.terminationGraceSeconds : Math.ceil(graceMs / 1000);
    const selector = `${LABEL.executorId}=${found.label}`;
    await this.client.delete(RESOURCE.deployment, found.name, { propagationPolicy: 'Background' });
    const { items } = await this.client.list(RESOURCE.pod, selector);
    for (const pod of items) await this.client.delete(RESOURCE.pod, pod.metadata.name!, { gracePeriodSeconds: graceSeconds });
    await this.client.delete(RESOURCE.service, found.name);
    const boundMs = graceSeconds * 1000 + this.options.stopSlackMs;
    const deadline = Date.now() + boundMs;
    for (let left = items.length; left > 0; ) {
      if (Date.now() > deadline) throw new NotReadyError(`removal of executor ${found.executorId}`, boundMs, `${left} pod(s) still terminating`);
      await sleep(this.options.pollIntervalMs);
      left = (await this.client.list(RESOURCE.pod, selector)).items.length;
    }
  }

  // ---------- app functions ----------

  async deployAppFunction(spec: AppFunctionSpec): Promise<AppFunctionInstance> {
    this.checkOpen();
    const what = `app function ${spec.name} (${spec.appId})`;
    await this.watchPods();
    await this.client.apply(appConfigMap(spec, this.options));
    const applied = await this.client.apply(appKnativeService(spec, this.options));
    this.trackApp(spec);
    try {
      const ready = await waitFor(this.client, RESOURCE.knativeService, appObjectName(spec.name), applied, knativeReady, {
        timeoutMs: this.options.readyTimeoutMs,
        what,
        signal: this.closing.signal,
      });
      return { appId: spec.appId, url: (ready.status?.url as string | undefined) ?? this.appUrl(spec.name) };
    } catch (e) {
      // Nothing half-deployed: an app function that cannot become ready is removed again.
      await this.deleteAppFunction(spec.appId, { quiet: true }).catch((err) => this.log.warn({ err, appId: spec.appId }, 'cleanup failed'));
      throw e;
    }
  }

  async deleteAppFunction(appId: string, { quiet = false }: { quiet?: boolean } = {}): Promise<void> {
    const tracked = this.apps.get(appId);
    if (!tracked || tracked.deleting) return;
    tracked.deleting = true;
    try {
      await this.removeAppObjects(appObjectName(tracked.name));
    } finally {
      this.apps.delete(appId);
    }
    if (!quiet) this.emit({ kind: 'app-function-exited', appId, code: null, signal: null, expected: true });
  }

  private async removeAppObjects(name: string): Promise<void> {
    await this.client.delete(RESOURCE.knativeService, name);
    await this.client.delete(RESOURCE.configMap, sourceConfigMapOf(name));
  }

  private appUrl(appName: string): string {
    return serviceUrl(appObjectName(appName), this.options);
  }

  /** Records an app function as this platform's (deployed or adopted). */
  private trackApp(spec: AppFunctionSpec): void {
    this.apps.set(spec.appId, { appId: spec.appId, name: spec.name, deleting: false });
  }

  // ---------- events ----------

  onEvent(listener: (e: PlatformEvent) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(e: PlatformEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error({ err }, 'platform event listener threw');
      }
    }
  }

  /** Starts the pod informer once; resolves when it listed and is watching. */
  private async watchPods(): Promise<void> {
    if (!this.podInformer) {
      const inf = informer(
        this.client,
        RESOURCE.pod,
        `${LABEL.managedBy}=${MANAGED_BY}`,
        {
          onList: (items) => {
            const seen = new Set<string>();
            for (const pod of items) {
              seen.add(pod.metadata.uid!);
              // After a (re)list, what already happened is the baseline, except for pods we were tracking.
              if (this.pods.has(pod.metadata.uid!)) this.onPod('MODIFIED', pod);
              else this.pods.set(pod.metadata.uid!, { restarts: podRestarts(pod), failed: !!podFailed(pod) });
            }
            for (const uid of this.pods.keys()) if (!seen.has(uid)) this.pods.delete(uid);
          },
          onEvent: (type, pod) => this.onPod(type, pod),
        },
        { retryMs: this.options.watchRetryMs, log: this.log },
      );
      this.podInformer = inf;
      inf.ready.catch(() => {
        if (this.podInformer === inf) this.podInformer = undefined;
        inf.stop();
      });
    }
    await this.podInformer.ready;
  }

  private onPod(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: KubeObject): void {
    const uid = pod.metadata.uid!;
    for (const l of this.podListeners) l(pod);
    const memo = this.pods.get(uid) ?? { restarts: 0, failed: false };
    if (type === 'DELETED') {
      this.pods.delete(uid);
      if (!memo.failed) this.podGone(pod, { code: null, signal: null, reason: 'pod deleted' });
      return;
    }
    const restarts = podRestarts(pod);
    // A pod marked for deletion behind our back is gone for serving at once; on a lost node (taint-based
    // eviction) nothing confirms the deletion, so it may never reach DELETED.
    const failed = podFailed(pod) ?? (pod.metadata.deletionTimestamp ? { code: null, signal: null, reason: 'pod is being deleted' } : undefined);
    this.pods.set(uid, { restarts, failed: memo.failed || !!failed });
    if (failed && !memo.failed) this.podGone(pod, failed);
    else if (restarts > memo.restarts) this.podGone(pod, lastExit(pod) ?? { code: null, signal: null, reason: 'restarted' }, true);
  }

  /** A pod's container exited, the pod failed, or it was deleted: tell listeners unless we caused it. */
  private podGone(pod: KubeObject, exit: { code: number | null; signal: string | null; reason: string }, restarted = false): void {
    const component = pod.metadata.labels?.[LABEL.component];
    const a = pod.metadata.annotations ?? {};
    if (component === 'executor') {
      const executorId = a[ANNOTATION.executorId];
      const tracked = executorId ? this.executors.get(executorId) : undefined;
      if (!tracked || tracked.stopping) return;
      this.log.warn({ executorId, pod: pod.metadata.name, ...exit }, 'executor pod exited');
      this.emit({ kind: 'executor-exited', executorId: executorId!, taskId: tracked.instance.taskId, code: exit.code, signal: exit.signal, expected: false });
    } else if (component === 'app-function' && restarted) {
      // Knative removes idle pods (scale to zero): only a container that died counts as a failure.
      const appId = a[ANNOTATION.appId] ?? pod.metadata.labels?.[LABEL.appId];
      const tracked = [...this.apps.values()].find((x) => x.appId === appId || labelValue(x.appId) === appId);
      if (!tracked || tracked.deleting) return;
      this.log.warn({ appId: tracked.appId, pod: pod.metadata.name, ...exit }, 'app function container exited');
      this.emit({ kind: 'app-function-exited', appId: tracked.appId, code: exit.code, signal: exit.signal, expected: false });
    }
  }

  // ---------- reconcile ----------

  /**
   * Brings the cluster in line with `desired` (built from the Store, see desiredStateFromStore): adopts
   * what exists, recreates what is missing, deletes labelled objects nobody wants. Returns what it did.
   */
  async reconcile(desired: DesiredState): Promise<ReconcileReport> {
    this.checkOpen();
    await this.watchPods();
    // One list after the other: four small requests, in an order the tests (and logs) can rely on.
    const deployments = await this.client.list(RESOURCE.deployment, managedSelector('executor'));
    const services = await this.client.list(RESOURCE.service, managedSelector('executor'));
    const knativeServices = await this.client.list(RESOURCE.knativeService, managedSelector('app-function'));
    const configMaps = await this.client.list(RESOURCE.configMap, managedSelector('app-function'));
    const plan = planReconcile(desired, {
      deployments: deployments.items,
      services: services.items,
      knativeServices: knativeServices.items,
      configMaps: configMaps.items,
    });
    for (const found of plan.executors.delete) await this.removeExecutorObjects(found);
    for (const app of plan.apps.delete) await this.removeAppObjects(app.name);
    for (const spec of plan.executors.adopt) this.trackExecutor(spec);
    for (const spec of plan.executors.repairService) await this.client.apply(executorService(spec, this.options));
    for (const spec of plan.executors.create) await this.startExecutor(spec);
    for (const spec of plan.apps.adopt) this.trackApp(spec);
    for (const spec of plan.apps.repairConfigMap) await this.client.apply(appConfigMap(spec, this.options));
    for (const spec of plan.apps.create) {
      // Not waited for: the gateway's health checks see when it is serving.
      await this.client.apply(appConfigMap(spec, this.options));
      await this.client.apply(appKnativeService(spec, this.options));
      this.trackApp(spec);
    }
    return {
      executors: {
        adopted: plan.executors.adopt.map((e) => e.executorId),
        created: plan.executors.create.map((e) => e.executorId),
        deleted: plan.executors.delete.map((e) => e.executorId),
      },
      apps: {
        adopted: plan.apps.adopt.map((a) => a.appId),
        created: plan.apps.create.map((a) => a.appId),
        deleted: plan.apps.delete.map((a) => a.appId ?? a.name),
      },
    };
  }

  /** Executors this platform instance tracks (started or adopted). */
  listExecutors(): ExecutorInstance[] {
    return [...this.executors.values()].map((t) => t.instance);
  }

  // ---------- lifecycle ----------

  private checkOpen(): void {
    if (this.closing.signal.aborted) throw new KubeShutDownError();
  }

  /** Stops watching. With onShutdown 'delete', also removes every executor and app function it tracks. */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.closing.abort(new KubeShutDownError());
      if (this.options.onShutdown === 'delete') {
        await Promise.all([...this.apps.keys()].map((id) => this.deleteAppFunction(id)));
        await Promise.all([...this.executors.keys()].map((id) => this.stopExecutor(id)));
      }
      this.podInformer?.stop();
      this.podInformer = undefined;
    })();
    return this.shutdownPromise;
  }
}
