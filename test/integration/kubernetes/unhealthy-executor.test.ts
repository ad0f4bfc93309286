/**
 * A TaskManager over the KubernetesPlatform (fake API server): an executor that stops answering its health probe is
 * taken out of the routes, its Deployment deleted and applied again through the platform, and it is ready again.
 * The test plays the cluster around the platform: its "kubelet" runs each executor Deployment as a real echo
 * executor process, and its "cluster DNS" maps the executor's Service URL to that process. No exit event reaches
 * the task manager (the pod is not reported as failed): only its health checks can notice.
 */
import test from 'ava';
import { KubernetesPlatform } from '../../../control/platform/kubernetes/platform.js';
import type { ExecutorInstance, ExecutorSpec, Platform } from '../../../lib/platform.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { TaskManager } from '../../../control/taskmanager/manager.js';
import { waitUntil } from '../../../lib/wait.js';
import { startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';
import { echo } from '../../helpers/local-platform.js';
import { recordRouteStates } from '../../helpers/store-records.js';
import { APPS, echoLaunch, lines, rig } from './fixtures.js';

/** The KubernetesPlatform, with the cluster's part played here: each executor runs as a local echo process reached by its URL. */
function withLocalPods(kube: KubernetesPlatform, pods: Map<string, EchoExecutor>): Platform {
  return {
    kind: kube.kind,
    listNodes: () => kube.listNodes(),
    async startExecutor(spec: ExecutorSpec): Promise<ExecutorInstance> {
      const instance = await kube.startExecutor(spec);
      const pod = await startEchoExecutor({ executorId: spec.executorId });
      pods.set(spec.executorId, pod);
      return { ...instance, url: pod.url };
    },
    async stopExecutor(executorId, options) {
      await kube.stopExecutor(executorId, options);
      await pods.get(executorId)?.kill();
      pods.delete(executorId);
    },
    deployAppFunction: (spec) => kube.deployAppFunction(spec),
    deleteAppFunction: (appId) => kube.deleteAppFunction(appId),
    onEvent: (listener) => kube.onEvent(listener),
    shutdown: () => kube.shutdown(),
  };
}

test('an executor on Kubernetes that stops answering its health checks leaves the routes and its Deployment is recreated', async (t) => {
  t.timeout(120_000);
  const r = await rig(t);
  const pods = new Map<string, EchoExecutor>();
  t.teardown(() => Promise.all([...pods.values()].map((p) => p.kill())));
  const store = new MemoryStore();
  const tm = new TaskManager({
    taskId: 'echobasetask-0123456789ab', executorName: 'echo', launch: echoLaunch, store, platform: withLocalPods(r.platform, pods),
    healthCheck: { intervalMs: 200, timeoutMs: 500, unansweredLimit: 2 }, restartBackoff: { initialMs: 50 },
  });
  t.teardown(() => tm.stop({ drain: false }));
  await tm.addExecutors([[{ node: 'gpu-a', globalRank: 0, localRank: 0 }]]);
  const before = (await store.getExecutor('echo-0'))!;
  t.is(before.state, 'ready');
  const states = recordRouteStates(store, 'echo-0');
  r.api.take();

  await pods.get('echo-0')!.kill(); // the container stops answering; nothing tells the platform

  await waitUntil('the route left the ready ones', () => states[0], { timeoutMs: 30_000 });
  t.is(states[0], 'failed');
  await waitUntil('ready again', () => states.includes('ready'), { timeoutMs: 60_000 });
  const requests = lines(r.api.take());
  const deleted = requests.indexOf(`DELETE ${APPS}/deployments/cs-exec-echo-0?propagationPolicy=Background`);
  t.true(deleted >= 0, 'the Deployment was deleted');
  t.true(requests.slice(deleted).some((l) => l.startsWith(`PATCH ${APPS}/deployments/cs-exec-echo-0?`)), 'and applied again');
  const after = (await store.getExecutor('echo-0'))!;
  t.deepEqual((await echo(after.url, 'back')).body, { echo: 'back' });
});
