/**
 * Sidecar benchmark, every figure next to a baseline measured in the same run:
 *  - inside a node (4 KiB … 64 MiB): send → recv → markDone throughput vs Buffer.copy of the same bytes, both
 *    rotating over buffers larger than the CPU cache (an executor's output is not cache-resident either);
 *  - between two sidecars: the same, producer on n0 and consumer on n1, vs a raw TCP loopback socket moving
 *    the same bytes to a child process (and, in the notes, vs a child reading with `onread` into one buffer);
 *  - for tensors larger than the inline limit, both again with the producer's tensor produced in place (allocate →
 *    send: no copy into shared memory), next to the same baselines;
 *  - small-object round trip (send → recv → markDone, one at a time) vs a raw unix-socket echo round trip.
 * The producer and the consumer each keep several transfers in flight (as executors do). Each round measures a
 * figure and its baselines back to back, each after a short pause; medians of rounds count (the machine is shared:
 * ratios are what hold).
 * Run alone: node --import tsx test/bench/sidecar.ts   (BENCH_ROUNDS=n, BENCH_SIDECAR_SIZES='1 MiB,64 MiB')
 * BENCH_SIDECAR_PEERS=store: instead, the same transfers through sidecars that find each other through a Redis store
 * (a local redis-server; no fixed peers; chunk entries written, waiting recvs looked up) vs sidecars with fixed peers
 * and no store, alternating round by round: the Store's cost on the hot path.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/net.js';
import { sleep } from '../../lib/wait.js';
import { startSidecars, type SidecarCluster } from '../helpers/sidecar.js';
import type { SidecarClient } from '../../sidecar/client/client.js';
import { tensor, type Tensor } from '../../sidecar/tensor.js';
import { median, formatTable, type BenchResult } from './types.js';
import { Ledger } from '../../sidecar/server/ledger.js';
import { INLINE_MAX_BYTES } from '../../sidecar/wire/protocol.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';

export type { BenchResult };

const KiB = 1024;
const MiB = 1024 * KiB;
const SIZES: Array<{ label: string; size: number; count: number; inflight: number }> = [
  { label: '4 KiB', size: 4 * KiB, count: 4000, inflight: 16 },
  { label: '1 MiB', size: MiB, count: 400, inflight: 4 },
  { label: '16 MiB', size: 16 * MiB, count: 40, inflight: 2 },
  { label: '64 MiB', size: 64 * MiB, count: 10, inflight: 2 },
];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ONLY = process.env.BENCH_SIDECAR_SIZES?.split(','); // e.g. '1 MiB,64 MiB'
const THROUGH_STORE = process.env.BENCH_SIDECAR_PEERS === 'store';
const fmt = (n: number) => n.toPrecision(3);
const gbps = (bytes: number, ns: bigint) => bytes / Number(ns); // bytes per ns = GB/s

/** Distinct buffers of `size` bytes totalling at least POOL_BYTES (at least 2): rotating over them keeps copies out of the CPU cache. */
const POOL_BYTES = 96 * MiB; // > 32 MiB L3 + 2 × 2 MiB L2 on this machine
const poolOf = (size: number) => Math.max(2, Math.ceil(POOL_BYTES / size));

/** Pools of distinct, already-touched buffers per size (one size at a time, so memory stays bounded). */
const pools = new Map<string, Uint8Array[]>();
function poolFor(what: 'src' | 'dst' | 'tensors', size: number): Uint8Array[] {
  const key = `${what}-${size}`;
  if (!pools.has(key)) {
    for (const k of pools.keys()) if (!k.endsWith(`-${size}`)) pools.delete(k);
    pools.set(key, Array.from({ length: poolOf(size) }, (_, i) => Buffer.alloc(size, i + 1))); // filled: no page faults later
  }
  return pools.get(key)!;
}
const sourcesOf = (size: number): Tensor[] => poolFor('tensors', size).map((b) => tensor('u8', [size], b));

/**
 * GB/s of `count` transfers of `size` bytes from `prod` to `cons`, as two executors do it: the producer keeps
 * `inflight` sends going (rotating source tensors) and the consumer keeps `inflight` recv → markDone going.
 */
export async function sidecarThroughput(prod: SidecarClient, cons: SidecarClient, size: number, count: number, inflight: number, tag: string, inPlace = false): Promise<number> {
  const sources = sourcesOf(size);
  // In place: each tensor is shared memory from allocate(), as a model's output written there is (the bench writes
  // nothing into it, as the raw TCP baseline's bytes already sit in its sender's memory); else rotating sources, copied.
  const source = inPlace ? () => prod.allocate('u8', [size]) : (i: number) => sources[i % sources.length]!;
  const lanes = (step: (i: number) => Promise<unknown>) => {
    let next = 0;
    return Promise.all(Array.from({ length: inflight }, async () => { while (next < count) await step(next++); }));
  };
  const start = process.hrtime.bigint();
  await Promise.all([
    lanes(async (i) => prod.send(await source(i), `${tag}-${i}`, [[cons.rank]])),
    lanes(async (i) => { await cons.recv(`${tag}-${i}`); await cons.markDone(`${tag}-${i}`); }),
  ]);
  return gbps(size * count, process.hrtime.bigint() - start);
}

/** Runs `measure` after a pause that lets the previous measurement's work (other processes, the kernel) finish. */
const SETTLE_MS = 300;
async function settled<T>(measure: () => T | Promise<T>): Promise<T> {
  await sleep(SETTLE_MS);
  return measure();
}

/** Buffer.copy between rotating sources and destinations larger than the CPU cache (as the sidecar's copies are). */
function memcpyThroughput(size: number, count: number): number {
  const src = poolFor('src', size);
  const dst = poolFor('dst', size);
  const n = src.length;
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) dst[(i * 7 + 3) % n]!.set(src[i % n]!);
  return gbps(size * count, process.hrtime.bigint() - start);
}

/**
 * A child process that reads bytes from TCP (or echoes on a unix socket) — the raw baselines. `sink` reads the
 * usual way ('data' events: a fresh buffer per read); `direct` dials the bench and reads with `onread` into one
 * reused 1 MiB buffer (the least work a Node receiver can do; no copy, no allocation).
 */
const SINK = `
const net = require('node:net');
const [mode, where] = process.argv.slice(1);
let want = -1, got = 0, head = Buffer.alloc(0);
const count = (s, d) => {
  if (want < 0) { head = Buffer.concat([head, d]); if (head.length < 8) return; want = Number(head.readBigUInt64LE(0)); got = head.length - 8; }
  else got += d.length;
  if (got >= want) { want = -1; got = 0; head = Buffer.alloc(0); s.write('k'); }
};
if (mode === 'direct') {
  const buf = Buffer.allocUnsafe(1 << 20);
  const s = net.connect({ port: Number(where), host: '127.0.0.1', noDelay: true,
    onread: { buffer: buf, callback: (n) => { count(s, buf.subarray(0, n)); return true; } } });
} else {
  const srv = net.createServer((s) => {
    s.setNoDelay(true);
    if (mode === 'echo') { s.on('data', (d) => s.write(d)); return; }
    s.on('data', (d) => count(s, d));
  });
  srv.listen(mode === 'echo' ? where : Number(where), mode === 'echo' ? undefined : '127.0.0.1', () => process.stdout.write('ready'));
}
`;

interface Sink { child: ChildProcess; sock: Socket }

async function startSink(mode: 'sink' | 'echo', where: string): Promise<Sink> {
  const child = spawn(process.execPath, ['-e', SINK, mode, where], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  const sock = await new Promise<Socket>((resolve) => {
    const s = mode === 'echo' ? connect(where, () => resolve(s)) : connect({ port: Number(where), host: '127.0.0.1' }, () => resolve(s));
  });
  sock.setNoDelay(true);
  return { child, sock };
}

async function startDirectSink(): Promise<Sink> {
  const server = createServer({ noDelay: true });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const child = spawn(process.execPath, ['-e', SINK, 'direct', String((server.address() as { port: number }).port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const sock = await accepted;
  server.close();
  return { child, sock };
}

/** GB/s of writing `count` buffers of `size` bytes (rotating sources) to a TCP sink, until it acknowledges all of them. */
async function tcpThroughput(sock: Socket, size: number, count: number): Promise<number> {
  const src = poolFor('src', size);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(size * count));
  const acked = new Promise<void>((r) => sock.once('data', () => r()));
  const start = process.hrtime.bigint();
  sock.write(head);
  for (let i = 0; i < count; i++) if (!sock.write(src[i % src.length]!)) await new Promise((r) => sock.once('drain', r));
  await acked;
  return gbps(size * count, process.hrtime.bigint() - start);
}

async function echoRtts(sock: Socket, n: number): Promise<number[]> {
  const out: number[] = [];
  const msg = Buffer.alloc(64, 1);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise<void>((r) => { sock.once('data', () => r()); sock.write(msg); });
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

async function objectRtts(prod: SidecarClient, cons: SidecarClient, n: number, tag: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${tag}-${i}`;
    const t0 = process.hrtime.bigint();
    await prod.send({ token: i, text: 'hello' }, id, [[cons.rank]]);
    await cons.recv(id);
    await cons.markDone(id);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

function row(name: string, figure: number, unit: string, baseline: number, baselineName: string, target?: string, notes?: string): BenchResult {
  return { name, figure, unit, baseline, baselineName, ratio: figure / baseline, ...(target ? { target } : {}), ...(notes ? { notes } : {}) };
}

/** Ledger ops/s for put → recv → markDone of `n` one-chunk ids (what the ledger costs per transfer), vs a Map set/get/delete loop. */
function ledgerOpsPerSecond(n: number): { ledger: number; map: number; tombstones: number } {
  const l = new Ledger({ free: () => {}, live: () => true }, 300_000);
  const alloc = { slab: 0, start: 0, count: 1, offset: 0, length: 8, reserved: 4096 };
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const id = `ledger-${i}`;
    l.add({ id, chunk: 0, kind: 'json', size: 8, alloc, producerRank: 0, groups: [[1]], doneRanks: new Set(), pushes: 0, expiresAt: Date.now() + 300_000, handedOut: false }, 1);
    void l.recv(id, 0, 1, Date.now() + 1000);
    l.done(id, 0, 1, false);
  }
  const t1 = performance.now();
  const m = new Map<string, { id: string; chunk: number }>();
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const id = `map-${i}`;
    m.set(id, { id, chunk: 0 });
    if (m.get(id)) hits++;
    m.delete(id);
  }
  const t2 = performance.now();
  if (hits !== n) throw new Error('map loop broken');
  return { ledger: n / ((t1 - t0) / 1000), map: n / ((t2 - t1) / 1000), tombstones: l.stats().tombstones };
}

/** 16 MiB of 4 KiB slots + 384 MiB of 256 KiB slots per node. */
export const BENCH_SLABS = [{ slotBytes: 4096, slots: 4096 }, { slotBytes: 256 * KiB, slots: 1536 }];

/**
 * The same transfers through sidecars that find each other through a Redis store and through sidecars with fixed
 * peers and no store, alternating round by round (figure: via the store; baseline: fixed peers).
 */
async function storeVsFixed(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const redis: RedisServer = await startRedis();
  const viaStore = await startSidecars({ nodes: [[0, 1], [2]], slabs: BENCH_SLABS, storeUrl: redis.url, peers: 'store' });
  const fixed = await startSidecars({ nodes: [[0, 1], [2]], slabs: BENCH_SLABS });
  try {
    const pairs = await Promise.all([viaStore, fixed].map(async (sc) => ({ prod: await sc.client(0), local: await sc.client(1), remote: await sc.client(2) })));
    for (const { prod, local, remote } of pairs) { // JIT warm-up, as in run()
      await sidecarThroughput(prod, local, 4 * KiB, 3000, 16, 'warm-jit-l');
      await sidecarThroughput(prod, remote, 4 * KiB, 3000, 16, 'warm-jit-r');
    }
    let remoteRecvs = 0; // measured cross-node recvs on the store cluster's consumer node
    const lookupsBefore = ((await viaStore.nodes[1]!.health()) as unknown as { store: { lookups: number } }).store.lookups;
    for (const s of SIZES.filter((x) => !ONLY || ONLY.includes(x.label))) {
      for (const { prod, local, remote } of pairs) {
        await sidecarThroughput(prod, local, s.size, Math.max(2, s.count / 10), s.inflight, `warm-l-${s.label}`);
        await sidecarThroughput(prod, remote, s.size, Math.max(2, s.count / 10), s.inflight, `warm-r-${s.label}`);
      }
      remoteRecvs += Math.max(2, s.count / 10) + ROUNDS * s.count;
      const inNode: number[][] = [[], []], across: number[][] = [[], []];
      for (let r = 0; r < ROUNDS; r++) {
        for (const [i, { prod, local, remote }] of pairs.entries()) {
          inNode[i]!.push(await sidecarThroughput(prod, local, s.size, s.count, s.inflight, `l-${s.label}-${r}`));
          across[i]!.push(await sidecarThroughput(prod, remote, s.size, s.count, s.inflight, `r-${s.label}-${r}`));
        }
      }
      const paired = (a: number[], b: number[]) => fmt(median(a.map((x, i) => x / b[i]!)));
      results.push(row(`in-node ${s.label}, peers via store`, median(inNode[0]!), 'GB/s', median(inNode[1]!), 'fixed peers, no store', undefined,
        `median of per-round ratios ${paired(inNode[0]!, inNode[1]!)}`));
      results.push(row(`between nodes ${s.label}, peers via store`, median(across[0]!), 'GB/s', median(across[1]!), 'fixed peers, no store', undefined,
        `median of per-round ratios ${paired(across[0]!, across[1]!)}`));
    }
    const rts = [[], []] as number[][];
    for (const [i, { prod, remote }] of pairs.entries()) await objectRtts(prod, remote, 300, `rt-warm-${i}`);
    for (let r = 0; r < 4; r++) for (const [i, { prod, remote }] of pairs.entries()) rts[i]!.push(...await objectRtts(prod, remote, 250, `rt-${r}-${i}`));
    remoteRecvs += 300 + 4 * 250;
    const lookups = ((await viaStore.nodes[1]!.health()) as unknown as { store: { lookups: number } }).store.lookups - lookupsBefore;
    results.push(row('small-object round trip across nodes, peers via store', median(rts[0]!), 'ms (median)', median(rts[1]!), 'fixed peers, no store', undefined,
      `the consumer's sidecar looked ${lookups} chunks up in the store over ${remoteRecvs} cross-node recvs (only recvs waiting > 50 ms are)`));
    return results;
  } finally {
    await viaStore.stop();
    await fixed.stop();
    await redis.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  ledgerOpsPerSecond(20_000); // JIT warm-up
  const ops = Array.from({ length: ROUNDS }, () => ledgerOpsPerSecond(100_000));
  results.push(row('ledger put→recv→markDone (1e5 ids)', median(ops.map((o) => o.ledger)), 'ids/s', median(ops.map((o) => o.map)), 'Map set/get/delete loop',
    undefined, `each id leaves a tombstone (${ops[0]!.tombstones} after a run; dropped by generation after the ttl); median of ${ROUNDS} rounds`));
  if (process.env.BENCH_SIDECAR_LEDGER_ONLY) return results;
  // 16 MiB of 4 KiB slots + 384 MiB of 256 KiB slots per node.
  if (THROUGH_STORE) return [...results, ...await storeVsFixed()];
  const sc: SidecarCluster = await startSidecars({ nodes: [[0, 1], [2]], slabs: BENCH_SLABS });
  const dir = mkdtempSync(join(tmpdir(), 'cs-bench-'));
  const tcp = await startSink('sink', String(await freePort()));
  const direct = await startDirectSink();
  const echo = await startSink('echo', join(dir, 'echo.sock'));
  try {
    const prod = await sc.client(0);
    const local = await sc.client(1);
    const remote = await sc.client(2);
    // JIT warm-up of the sidecars and clients (thousands of calls: per-transfer CPU falls ~3× over the first 2000),
    // so a figure does not depend on which sizes ran before it (BENCH_SIDECAR_SIZES).
    await sidecarThroughput(prod, local, 4 * KiB, 3000, 16, 'warm-jit-l');
    await sidecarThroughput(prod, remote, 4 * KiB, 3000, 16, 'warm-jit-r');
    for (const s of SIZES.filter((x) => !ONLY || ONLY.includes(x.label))) {
      await sidecarThroughput(prod, local, s.size, Math.max(2, s.count / 10), s.inflight, `warm-l-${s.label}`);
      await sidecarThroughput(prod, remote, s.size, Math.max(2, s.count / 10), s.inflight, `warm-r-${s.label}`);
      memcpyThroughput(s.size, Math.max(2, s.count / 10));
      await tcpThroughput(tcp.sock, s.size, Math.max(2, s.count / 10));
      await tcpThroughput(direct.sock, s.size, Math.max(2, s.count / 10));
      const inPlace = s.size > INLINE_MAX_BYTES; // smaller tensors travel inside the request: allocate() gives ordinary memory
      const inNode: number[] = [], memcpy: number[] = [], across: number[] = [], raw: number[] = [], rawDirect: number[] = [];
      const inNodePlaced: number[] = [], acrossPlaced: number[] = [];
      for (let r = 0; r < ROUNDS; r++) { // each round measures a figure and its baselines back to back (the load varies)
        // Each measurement starts from a settled machine: right after a transfer between sidecars, a raw TCP run was
        // measured up to ~30 % slower than 300 ms later (the processes and the kernel still finishing the last one).
        inNode.push(await settled(() => sidecarThroughput(prod, local, s.size, s.count, s.inflight, `l-${s.label}-${r}`)));
        memcpy.push(await settled(() => memcpyThroughput(s.size, s.count)));
        if (inPlace) inNodePlaced.push(await settled(() => sidecarThroughput(prod, local, s.size, s.count, s.inflight, `lp-${s.label}-${r}`, true)));
        across.push(await settled(() => sidecarThroughput(prod, remote, s.size, s.count, s.inflight, `r-${s.label}-${r}`)));
        raw.push(await settled(() => tcpThroughput(tcp.sock, s.size, s.count)));
        if (inPlace) acrossPlaced.push(await settled(() => sidecarThroughput(prod, remote, s.size, s.count, s.inflight, `rp-${s.label}-${r}`, true)));
        rawDirect.push(await settled(() => tcpThroughput(direct.sock, s.size, s.count)));
      }
      const paired = (a: number[], b: number[]) => fmt(median(a.map((x, i) => x / b[i]!)));
      results.push(row(`in-node ${s.label}`, median(inNode), 'GB/s', median(memcpy), 'Buffer.copy, out of cache', s.size >= MiB ? '≥ 0.5 × memcpy' : undefined,
        `${s.inflight} in flight; sources and baseline buffers rotate over ${poolOf(s.size)} × ${s.label}; median of per-round ratios ${paired(inNode, memcpy)}`));
      if (inPlace) {
        results.push(row(`in-node ${s.label}, produced in place`, median(inNodePlaced), 'GB/s', median(memcpy), 'Buffer.copy, out of cache', undefined,
          `allocate → send → recv → markDone: no copy at all; median of per-round ratios ${paired(inNodePlaced, memcpy)}`));
      }
      results.push(row(`between nodes ${s.label}`, median(across), 'GB/s', median(raw), 'raw TCP loopback', s.size >= MiB ? '≥ 0.7 × raw TCP' : undefined,
        `${s.inflight} in flight; ${inPlace ? 'the producer\'s copy into shared memory included (a third copy; raw TCP makes two); ' : ''}median of per-round ratios ` +
        `${paired(across, raw)}; vs raw TCP read with onread into one reused buffer (${fmt(median(rawDirect))} GB/s): ${fmt(median(across) / median(rawDirect))}`));
      if (inPlace) {
        results.push(row(`between nodes ${s.label}, produced in place`, median(acrossPlaced), 'GB/s', median(raw), 'raw TCP loopback', s.size >= MiB ? '≥ 0.7 × raw TCP' : undefined,
          `allocate → send: shared memory → TCP → the peer's shared memory, two copies as raw TCP makes; median of per-round ratios ${paired(acrossPlaced, raw)}; ` +
          `vs raw TCP read with onread into one reused buffer: ${fmt(median(acrossPlaced) / median(rawDirect))}`));
      }
    }
    await objectRtts(prod, local, 500, 'rt-warm');
    await echoRtts(echo.sock, 500);
    const rt = median(await objectRtts(prod, local, 3000, 'rt-local'));
    const base = median(await echoRtts(echo.sock, 3000));
    results.push(row('small-object round trip (send→recv→markDone)', rt, 'ms (median)', base, 'raw unix-socket echo RTT', '≤ 0.3 ms'));
    const rtRemote = median(await objectRtts(prod, remote, 1000, 'rt-remote'));
    results.push(row('small-object round trip across nodes', rtRemote, 'ms (median)', base, 'raw unix-socket echo RTT'));
    return results;
  } finally {
    for (const x of [tcp, direct, echo]) { x.sock.destroy(); x.child.kill(); }
    await sc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await run();
  console.log(formatTable(results));
  for (const r of results) if (r.notes) console.log(`- ${r.name}: ${r.notes}`);
}
