import test from 'ava';
import { desiredStateFromStore, planReconcile, type ClusterState } from '../../../../../control/platform/kubernetes/reconcile.js';
import { appKnativeService, appConfigMap, executorDeployment, executorService } from '../../../../../control/platform/kubernetes/manifests.js';
import { MemoryStore } from '../../../../../control/store/memory.js';
import type { AppFunctionSpec, ExecutorSpec } from '../../../../../lib/platform.js';
import type { KubeObject } from '../../../../../control/platform/kubernetes/client.js';
import type { LaunchSpec } from '../../../../../lib/descriptor.js';

const launch: LaunchSpec = { kind: 'echo', entry: 'executors/echo/main.ts', image: 'cornserve/echo', args: [], devicesPerExecutor: 1 };
const exec = (id: string): ExecutorSpec => ({ executorId: id, taskId: 't1', node: 'n1', devices: [{ node: 'n1', globalRank: 0, localRank: 0 }], launch });
const app = (appId: string, name: string): AppFunctionSpec => ({ appId, name, source: 'x', launch: { ...launch, kind: 'app-runtime', image: 'cornserve/app-runtime' } });
const asFound = (o: unknown) => o as KubeObject;

const cluster = (executors: ExecutorSpec[], apps: AppFunctionSpec[], drop: { services?: string[]; configMaps?: string[] } = {}): ClusterState => ({
  deployments: executors.map((e) => asFound(executorDeployment(e))),
  services: executors.filter((e) => !drop.services?.includes(e.executorId)).map((e) => asFound(executorService(e))),
  knativeServices: apps.map((a) => asFound(appKnativeService(a))),
  configMaps: apps.filter((a) => !drop.configMaps?.includes(a.appId)).map((a) => asFound(appConfigMap(a))),
});

test('executors the Store knows and the cluster has are adopted', (t) => {
  const plan = planReconcile({ executors: [exec('e1')], apps: [] }, cluster([exec('e1')], []));
  t.deepEqual(plan.executors.adopt.map((e) => e.executorId), ['e1']);
  t.deepEqual([plan.executors.create, plan.executors.delete, plan.executors.repairService], [[], [], []]);
});

test('executors the Store knows and the cluster lacks are created', (t) => {
  const plan = planReconcile({ executors: [exec('e1'), exec('e2')], apps: [] }, cluster([exec('e1')], []));
  t.deepEqual(plan.executors.create.map((e) => e.executorId), ['e2']);
});

test('labelled executors the Store does not know are deleted', (t) => {
  const plan = planReconcile({ executors: [exec('e1')], apps: [] }, cluster([exec('e1'), exec('stale')], []));
  t.deepEqual(plan.executors.delete, [{ name: 'cs-exec-stale', executorId: 'stale', label: 'stale' }]);
});

test("an adopted executor whose Service is missing gets the Service back", (t) => {
  const plan = planReconcile({ executors: [exec('e1')], apps: [] }, cluster([exec('e1')], [], { services: ['e1'] }));
  t.deepEqual(plan.executors.repairService.map((e) => e.executorId), ['e1']);
});

test('an app function under the same name but another app id is replaced, not adopted', (t) => {
  const plan = planReconcile({ executors: [], apps: [app('app-new', 'echo')] }, cluster([], [app('app-old', 'echo')]));
  t.deepEqual([plan.apps.create.map((a) => a.appId), plan.apps.adopt, plan.apps.delete], [['app-new'], [], []]);
});

test('app functions and orphaned source ConfigMaps the Store does not know are deleted', (t) => {
  const c = cluster([], [app('app-1', 'keep'), app('app-2', 'gone')]);
  c.configMaps.push(asFound(appConfigMap(app('app-3', 'orphan'))));
  const plan = planReconcile({ executors: [], apps: [app('app-1', 'keep')] }, c);
  t.deepEqual(plan.apps.delete, [{ name: 'cs-app-gone', appId: 'app-2' }, { name: 'cs-app-orphan' }]);
  t.deepEqual(plan.apps.adopt.map((a) => a.appId), ['app-1']);
});

test('an adopted app function whose source ConfigMap is missing gets it back', (t) => {
  const plan = planReconcile({ executors: [], apps: [app('app-1', 'keep')] }, cluster([], [app('app-1', 'keep')], { configMaps: ['app-1'] }));
  t.deepEqual(plan.apps.repairConfigMap.map((a) => a.appId), ['app-1']);
});

test("the desired state is built from the Store's executor routes and apps", async (t) => {
  const store = new MemoryStore();
  const device = { node: 'n2', globalRank: 3, localRank: 1 };
  await store.acquireTask({ taskId: 't1', key: 'k', taskClass: 'EchoBaseTask', task: {}, state: 'ready', devices: [device], updatedAt: 0 });
  await store.putExecutor({ executorId: 'e1', taskId: 't1', url: 'http://x', sidecarRanks: [3], devices: [device], state: 'ready', outstanding: 0, startedAt: 0 });
  await store.putExecutor({ executorId: 'orphan', taskId: 'unknown-task', url: 'http://y', sidecarRanks: [], devices: [device], state: 'ready', outstanding: 0, startedAt: 0 });
  await store.putApp({ appId: 'app-1', name: 'echo', aliases: [], source: 'src', taskIds: ['t1'], state: 'ready', createdAt: 0 });
  const desired = await desiredStateFromStore(store, {
    launchFor: (task) => ({ ...launch, args: [task.taskClass] }),
    appFunctionFor: (a) => ({ appId: a.appId, name: a.name, source: a.source, launch }),
  });
  t.deepEqual(desired.executors, [{ executorId: 'e1', taskId: 't1', node: 'n2', devices: [device], launch: { ...launch, args: ['EchoBaseTask'] } }]);
  t.deepEqual(desired.apps.map((a) => [a.appId, a.source]), [['app-1', 'src']]);
  await store.close();
});
