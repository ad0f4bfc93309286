/**
 * Reconcile: what the cluster has (objects labelled managed-by=cornserve) against what the Store says
 * should run. Pure planning here; KubernetesPlatform.reconcile() carries the plan out.
 *  - adopt: an executor / app function the Store knows and the cluster has keeps running untouched
 *    (a missing companion object — an executor's Service, an app's source ConfigMap — is re-applied);
 *  - create: the Store knows it, the cluster does not have it (or has another app under the same name);
 *  - delete: labelled objects the Store does not know.
 */
import type { AppRecord, ExecutorRoute, Store, UnitTaskRecord } from '../../../lib/store.js';
import type { LaunchSpec } from '../../../lib/descriptor.js';
import type { AppFunctionSpec, ExecutorSpec } from '../../../lib/platform.js';
import type { KubeObject } from './client.js';
import { ANNOTATION, LABEL, SOURCE_CONFIGMAP_SUFFIX as SOURCE_SUFFIX, appObjectName, executorObjectName, sourceConfigMapOf } from './names.js';

export interface DesiredState {
  executors: ExecutorSpec[];
  apps: AppFunctionSpec[];
}

export interface ClusterState {
  deployments: KubeObject[];
  services: KubeObject[];
  knativeServices: KubeObject[];
  configMaps: KubeObject[];
}

/** A labelled executor found in the cluster, by object name. */
export interface FoundExecutor {
  name: string;
  executorId: string;
  /** Value of the executor-id label (its pods carry it). */
  label: string;
}

export interface ReconcilePlan {
  executors: { adopt: ExecutorSpec[]; create: ExecutorSpec[]; repairService: ExecutorSpec[]; delete: FoundExecutor[] };
  apps: { adopt: AppFunctionSpec[]; create: AppFunctionSpec[]; repairConfigMap: AppFunctionSpec[]; delete: Array<{ name: string; appId?: string }> };
}

export interface ReconcileReport {
  executors: { adopted: string[]; created: string[]; deleted: string[] };
  apps: { adopted: string[]; created: string[]; deleted: string[] };
}

function foundExecutor(o: KubeObject): FoundExecutor {
  const label = o.metadata.labels?.[LABEL.executorId] ?? '';
  return { name: o.metadata.name!, executorId: o.metadata.annotations?.[ANNOTATION.executorId] ?? label, label };
}

export function planReconcile(desired: DesiredState, cluster: ClusterState): ReconcilePlan {
  const deployments = new Set(cluster.deployments.map((d) => d.metadata.name!));
  const services = new Set(cluster.services.map((s) => s.metadata.name!));
  const wanted = new Set(desired.executors.map((e) => executorObjectName(e.executorId)));
  const executors: ReconcilePlan['executors'] = { adopt: [], create: [], repairService: [], delete: [] };
  for (const spec of desired.executors) {
    const name = executorObjectName(spec.executorId);
    if (!deployments.has(name)) executors.create.push(spec);
    else {
      executors.adopt.push(spec);
      if (!services.has(name)) executors.repairService.push(spec);
    }
  }
  const strays = new Map<string, FoundExecutor>();
  for (const o of [...cluster.deployments, ...cluster.services]) if (!wanted.has(o.metadata.name!)) strays.set(o.metadata.name!, strays.get(o.metadata.name!) ?? foundExecutor(o));
  executors.delete = [...strays.values()].sort((a, b) => a.name.localeCompare(b.name));

  const ksvcById = new Map(cluster.knativeServices.map((s) => [s.metadata.name!, s.metadata.annotations?.[ANNOTATION.appId] ?? s.metadata.labels?.[LABEL.appId]]));
  const configMaps = new Set(cluster.configMaps.map((c) => c.metadata.name!));
  const wantedApps = new Set(desired.apps.map((a) => appObjectName(a.name)));
  const apps: ReconcilePlan['apps'] = { adopt: [], create: [], repairConfigMap: [], delete: [] };
  for (const spec of desired.apps) {
    const name = appObjectName(spec.name);
    if (!ksvcById.has(name) || ksvcById.get(name) !== spec.appId) apps.create.push(spec);
    else {
      apps.adopt.push(spec);
      if (!configMaps.has(sourceConfigMapOf(name))) apps.repairConfigMap.push(spec);
    }
  }
  const appStrays = new Map<string, { name: string; appId?: string }>();
  for (const [name, appId] of ksvcById) if (!wantedApps.has(name)) appStrays.set(name, { name, ...(appId ? { appId } : {}) });
  for (const c of cluster.configMaps) {
    const name = c.metadata.name!.endsWith(SOURCE_SUFFIX) ? c.metadata.name!.slice(0, -SOURCE_SUFFIX.length) : c.metadata.name!;
    if (!wantedApps.has(name) && !appStrays.has(name)) appStrays.set(name, { name });
  }
  apps.delete = [...appStrays.values()].sort((a, b) => a.name.localeCompare(b.name));
  return { executors, apps };
}

export interface DesiredResolvers {
  /** The launch spec of a unit task's executors (the resource manager rebuilds the task and asks its descriptor). */
  launchFor(task: UnitTaskRecord): LaunchSpec | Promise<LaunchSpec>;
  /** The app-function spec of a registered app (the gateway's runtime launch spec and env). */
  appFunctionFor(app: AppRecord): AppFunctionSpec | Promise<AppFunctionSpec>;
}

/** The desired state as the Store describes it: every executor route of a known task, every registered app. */
export async function desiredStateFromStore(store: Store, resolve: DesiredResolvers): Promise<DesiredState> {
  const [tasks, routes, apps] = await Promise.all([store.listTasks(), store.listExecutors(), store.listApps()]);
  const byId = new Map(tasks.map((t) => [t.taskId, t]));
  const executors: ExecutorSpec[] = [];
  for (const r of routes as ExecutorRoute[]) {
    const task = byId.get(r.taskId);
    const node = r.devices[0]?.node;
    if (!task || !node) continue; // a route without its task (or devices) cannot be rebuilt: reconcile deletes it
    executors.push({ executorId: r.executorId, taskId: r.taskId, node, devices: r.devices, launch: await resolve.launchFor(task) });
  }
  return { executors, apps: await Promise.all(apps.map((a) => resolve.appFunctionFor(a))) };
}
