/**
 * The sidecar DaemonSet's entry point: `node --import tsx control/platform/kubernetes/sidecar-main.ts`.
 * Reads the GPU nodes (in-cluster service account, nodes get/list only), works out this node's ranks (and, without
 * a Store, its fixed peers; sidecar.ts), then runs sidecar/main.ts with them and passes signals on; exits with the
 * sidecar's code. With CORNSERVE_STORE_URL the sidecar registers in Redis and finds its peers there.
 * Environment: CORNSERVE_NODE (the node's name, from the downward API) and the cornserve-config ConfigMap
 * (CORNSERVE_SIDECAR_PORT = HTTP port, peers on the next port; CORNSERVE_STORE_URL; CORNSERVE_DEVICE_RESOURCE).
 * `--dry-run` prints the sidecar's arguments as JSON and exits.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { logger } from '../../../lib/log.js';
import { KubeClient, RESOURCE } from './client.js';
import { gpuNodes } from './discovery.js';
import { manifestOptionsFromEnv } from './options.js';
import { sidecarArgs, sidecarTopology } from './sidecar.js';

const SIDECAR_MAIN = fileURLToPath(new URL('../../../sidecar/main.ts', import.meta.url));
const log = logger('sidecar-launch');

async function main(): Promise<number> {
  const me = process.env.CORNSERVE_NODE;
  if (!me) throw new Error('CORNSERVE_NODE must name this node (downward API: spec.nodeName)');
  const o = manifestOptionsFromEnv(process.env);
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const client = new KubeClient(kc, o.namespace, 'cornserve-sidecar');
  const nodes = gpuNodes((await client.list(RESOURCE.node)).items, o.deviceResource, o.sidecarPort);
  const topology = sidecarTopology(nodes, me, o.sidecarPort + 1);
  const args = sidecarArgs(topology, { socket: o.sidecarSocket, httpPort: o.sidecarPort, peerPort: o.sidecarPort + 1, storeUrl: o.storeUrl });
  if (process.argv.includes('--dry-run')) {
    process.stdout.write(`${JSON.stringify(args)}\n`);
    return 0;
  }
  log.info({ node: me, ranks: topology.ranks, ...(o.storeUrl ? { peers: 'through the store' } : { peers: topology.peers.map((p) => p.node) }) }, 'starting sidecar');
  const child = spawn(process.execPath, [...process.execArgv, SIDECAR_MAIN, ...args], { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
}

main().then(
  (code) => process.exit(code),
  (err) => {
    log.fatal({ err }, (err as Error).message);
    process.exit(1);
  },
);
