/**
 * One local cluster per test file: `useLocalCluster(test)` starts etcd and the three servers before the file's
 * tests and stops them after; `cluster.kubelet()` adds a process-kubelet node; `cluster.namespace()` makes a fresh
 * namespace with the service accounts the platform's pods name, so tests in one file do not see each other's
 * objects. Without the binaries the file fails (never skips): `make kube-binaries` builds them.
 */
import type { TestFn } from 'ava';
import { CoreV1Api } from '@kubernetes/client-node';
import { startLocalCluster, type ClusterOptions, type LocalCluster } from './cluster.js';
import { ProcessKubelet, type KubeletOptions } from './kubelet.js';

export interface ClusterFixture {
  readonly cluster: LocalCluster;
  kubelet(o: Omit<KubeletOptions, 'kubeConfig' | 'index'>): Promise<ProcessKubelet>;
  namespace(prefix: string): Promise<string>;
}

/** The service accounts the platform's executors and app functions run as (knative/base creates them in a cluster). */
const SERVICE_ACCOUNTS = ['cornserve-executor', 'cornserve-app-function'];

export function useLocalCluster(test: TestFn, o: ClusterOptions = {}): () => ClusterFixture {
  let fixture: ClusterFixture | undefined;
  const kubelets: ProcessKubelet[] = [];
  let namespaces = 0;
  test.before(async () => {
    const cluster = await startLocalCluster(o);
    const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    fixture = {
      cluster,
      async kubelet(k) {
        const kubelet = await ProcessKubelet.start({ ...k, kubeConfig: cluster.kubeConfig(), index: kubelets.length + 1 });
        kubelets.push(kubelet);
        return kubelet;
      },
      async namespace(prefix) {
        const name = `${prefix}-${++namespaces}`;
        await core.createNamespace({ body: { metadata: { name } } });
        for (const sa of SERVICE_ACCOUNTS) await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: sa } } });
        return name;
      },
    };
  });
  test.after.always(async () => {
    for (const k of kubelets) await k.stop();
    await fixture?.cluster.stop();
  });
  return () => {
    if (!fixture) throw new Error('the local cluster did not start (see the before hook)');
    return fixture;
  };
}
