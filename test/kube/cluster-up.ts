/**
 * `make cluster-up`: a local Kubernetes control plane (etcd, kube-apiserver, controller-manager, scheduler) and
 * process-kubelet GPU nodes, for trying the platform by hand. Prints the kubeconfig path; Ctrl-C stops it all
 * and removes its folder.
 */
import { Command } from 'commander';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startLocalCluster } from './cluster.js';
import { ProcessKubelet } from './kubelet.js';

const program = new Command('cluster-up')
  .description('Start a local Kubernetes 1.20 control plane with process-kubelet nodes (test infrastructure); Ctrl-C stops it')
  .option('--nodes <n>', 'process-kubelet nodes to register (gpu-a, gpu-b, ...)', '1')
  .option('--gpus <n>', 'nvidia.com/gpu count of each node', '4')
  .parse();
const opts = program.opts<{ nodes: string; gpus: string }>();
const nodes = Number(opts.nodes);
const gpus = Number(opts.gpus);
if (!Number.isInteger(nodes) || nodes < 0 || nodes > 26) program.error(`--nodes must be an integer 0..26, got ${opts.nodes}`);
if (!Number.isInteger(gpus) || gpus < 0) program.error(`--gpus must be a non-negative integer, got ${opts.gpus}`);

const cluster = await startLocalCluster();
const kubelets: ProcessKubelet[] = [];
for (let i = 0; i < nodes; i++) {
  const node = `gpu-${String.fromCharCode(97 + i)}`;
  kubelets.push(await ProcessKubelet.start({ kubeConfig: cluster.kubeConfig(), node, index: i + 1, gpus, labels: { 'nvidia.com/gpu.present': 'true' } }));
}
process.stdout.write(
  `local cluster ready: ${cluster.server} (Kubernetes 1.20, ${nodes} process-kubelet node(s) with ${gpus} GPUs each)\n` +
  `  export KUBECONFIG=${cluster.kubeconfigPath}\n` +
  `  server logs: ${cluster.dir}/*.log\n` +
  'Ctrl-C stops the cluster and removes its folder.\n',
);
// The servers are unref'd children; this keeps the command in the foreground until a signal.
const keepAlive = setInterval(() => {}, 1 << 30);
exitOnSignal(async () => {
  clearInterval(keepAlive);
  for (const k of kubelets) await k.stop();
  await cluster.stop();
});
