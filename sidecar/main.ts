/**
 * `node --import tsx sidecar/main.ts --node n0 --ranks 0,1 --socket /tmp/sc-n0.sock --peer n1=127.0.0.1:7101@2,3`
 * `node --import tsx sidecar/main.ts --node n0 --ranks 0,1 --socket /tmp/sc-n0.sock --store-url redis://127.0.0.1:6379` (peers found in the Store)
 * Starts one node's sidecar server; stops cleanly (segment unlinked) on SIGINT/SIGTERM.
 * Prints one JSON line `{"ready": {...info}}` on stdout once it accepts connections.
 */
import { Command, InvalidArgumentError } from 'commander';
import { createStore } from '../control/store/index.js';
import { exitOnSignal } from '../lib/shutdown.js';
import { startTelemetry, stopTelemetry } from '../lib/telemetry.js';
import { SidecarServer } from './server/server.js';
import type { PeerAddress } from './server/peers.js';
import type { SlabSpec } from './shm/memory.js';

const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`not a non-negative integer: ${v}`);
  return n;
};
const ranks = (v: string) => v.split(',').map((s) => int(s.trim()));
const peer = (v: string, acc: PeerAddress[]) => {
  const m = /^([A-Za-z0-9_.-]+)=([^:@]+):(\d+)@([\d,]+)$/.exec(v);
  if (!m) throw new InvalidArgumentError(`expected NODE=HOST:PORT@RANKS (e.g. n1=127.0.0.1:7101@2,3), got ${v}`);
  return [...acc, { node: m[1]!, host: m[2]!, port: Number(m[3]), ranks: ranks(m[4]!) }];
};
const slab = (v: string, acc: SlabSpec[]) => {
  const m = /^(\d+)x(\d+)$/.exec(v);
  if (!m) throw new InvalidArgumentError(`expected SLOT_BYTESxSLOTS (e.g. 4096x4096), got ${v}`);
  return [...acc, { slotBytes: Number(m[1]), slots: Number(m[2]) }];
};

const program = new Command('sidecar')
  .description('Cornserve sidecar: moves tensors and objects between executors (shared memory inside a node, TCP between nodes)')
  .requiredOption('--node <name>', 'this node\'s name')
  .requiredOption('--ranks <list>', 'global ranks served on this node, e.g. 0,1', ranks)
  .requiredOption('--socket <path>', 'unix socket for the local executors\' clients')
  .option('--host <host>', 'address peers use to reach this sidecar', '127.0.0.1')
  .option('--peer-port <port>', 'TCP port for peer sidecars (0: any)', int, 0)
  .option('--http-port <port>', 'HTTP port for /health, /info, /metrics (0: any)', int, 0)
  .option('--peer <spec>', 'another node\'s sidecar: NODE=HOST:PORT@RANKS (repeatable)', peer, [] as PeerAddress[])
  .option('--slab <spec>', 'a shared-memory slab SLOT_BYTESxSLOTS (repeatable; default 4096x4096 and 262144x1984 = 512 MiB)', slab, [] as SlabSpec[])
  .option('--ttl-ms <ms>', 'expiry of unconsumed chunks', int, 300_000)
  .option('--sweep-ms <ms>', 'how often expired chunks are freed', int)
  .option('--store-url <url>', 'the Store (redis://host:port): register this sidecar, find peers and chunks through it, record where chunks for other nodes are held; default: fixed --peer only')
  .option('--store-prefix <prefix>', 'Redis key prefix', 'cornserve:')
  .option('--lease-ms <ms>', 'with --store-url: registration lease (renewed every third); a crashed sidecar is reaped after it', int, 10_000);

program.parse();
const o = program.opts<{
  node: string; ranks: number[]; socket: string; host: string; peerPort: number; httpPort: number; peer: PeerAddress[];
  slab: SlabSpec[]; ttlMs: number; sweepMs?: number; storeUrl?: string; storePrefix: string; leaseMs: number;
}>();

// Spans only when they go somewhere (lib/telemetry): its async context tracking costs on every request of this hot
// path. Without them the sidecar still passes each request's traceparent on to its peers.
await startTelemetry('cornserve-sidecar');
const store = o.storeUrl ? createStore({ redisUrl: o.storeUrl, prefix: o.storePrefix }) : undefined;
await store?.ready();
const server = new SidecarServer({
  node: o.node, ranks: o.ranks, socketPath: o.socket, host: o.host, peerPort: o.peerPort, httpPort: o.httpPort, peers: o.peer,
  ttlMs: o.ttlMs, leaseMs: o.leaseMs, ...(o.slab.length ? { slabs: o.slab } : {}), ...(o.sweepMs ? { sweepMs: o.sweepMs } : {}), ...(store ? { store } : {}),
});
try {
  await server.start();
} catch (err) {
  process.stderr.write(`sidecar failed to start: ${(err as Error).message}\n`);
  await store?.close();
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ ready: server.info() })}\n`);

const shutdown = exitOnSignal(async (sig) => {
  server.log.info({ sig }, 'stopping');
  await server.stop();
  await store?.close();
  await Promise.race([stopTelemetry(), new Promise((r) => setTimeout(r, 2000).unref())]); // flush spans, bounded
});
process.on('disconnect', () => shutdown.stop('disconnect'));
