/**
 * The sidecar DaemonSet's launcher as a real child process against the fake API server (KUBECONFIG points
 * at it): it lists the GPU nodes and works out this node's sidecar command line (--dry-run prints it).
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeKubeApi, writeKubeconfig, type FakeKubeApi } from '../../helpers/fake-kube-api.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const gpuNode = (name: string, gpus: string, ip: string) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name },
  status: { allocatable: { 'nvidia.com/gpu': gpus }, conditions: [{ type: 'Ready', status: 'True' }], addresses: [{ type: 'InternalIP', address: ip }] },
});

async function launch(t: { teardown(fn: () => Promise<void>): void }, api: FakeKubeApi, node: string) {
  const { path: kubeconfig, remove } = await writeKubeconfig(api.url);
  t.teardown(remove);
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'control/platform/kubernetes/sidecar-main.ts', '--dry-run'],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, CORNSERVE_NODE: node, CORNSERVE_STORE_URL: 'redis://redis:6379', CORNSERVE_LOG_LEVEL: 'error' },
        timeout: 120_000, // a node + tsx start; 30 s was exceeded at load 35 (the child was killed, exit code 1)
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

test("the sidecar launcher reads the GPU nodes and prints this node's sidecar command line (with the store, no fixed peers)", async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  api.put(gpuNode('gpu-b', '2', '10.0.0.2'));
  api.put(gpuNode('gpu-a', '1', '10.0.0.1'));
  const { code, stdout } = await launch(t, api, 'gpu-b');
  t.is(code, 0);
  t.deepEqual(JSON.parse(stdout), [
    '--node', 'gpu-b', '--ranks', '1,2', '--socket', '/dev/shm/cornserve-sidecar.sock', '--host', '10.0.0.2',
    '--peer-port', '10001', '--http-port', '10000', '--store-url', 'redis://redis:6379', // peers: through the store
  ]);
  t.deepEqual(api.requests.map((r) => `${r.method} ${r.path}`), ['GET /api/v1', 'GET /api/v1/nodes']);
});

test('the sidecar launcher refuses a node without GPUs with a clear message', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  api.put(gpuNode('gpu-a', '1', '10.0.0.1'));
  const { code, stderr } = await launch(t, api, 'cpu-1');
  t.is(code, 1);
  t.regex(stderr, /node cpu-1 is not a Ready, schedulable GPU node \(known: gpu-a\)/);
});
