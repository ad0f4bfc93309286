/**
 * Sidecar benchmark, every figure next to a baseline measured in the same run:
 *  - inside a node (4 KiB … 64 MiB): send → recv → markDone throughput vs Buffer.copy of the same bytes;
 *  - between two sidecars: the same, producer on n0 and consumer on n1, vs a raw TCP loopback socket
 *    moving the same bytes to a child process;
 *  - small-object round trip (send → recv → markDone, one at a time) vs a raw unix-socket echo round trip.
 * Several transfers are kept in flight (as executors do); the median of rounds counts.
 * Run alone: node --import tsx test/bench/sidecar.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/net.js';
import { startSidecars, type SidecarCluster } from '../helpers/sidecar.js';
import type { SidecarClient } from '../../sidecar/client/client.js';
import { tensor } from '../../sidecar/tensor.js';
import { formatTable, type BenchResult } from './types.js';

export type { BenchResult };


const KiB = 1024;
const MiB = 1024 * KiB;
const SIZES: Array<{ label: string; size: number; count: number; inflight: number }> = [
  { label: '4 KiB', size: 4 * KiB, count: 4000, inflight: 16 },
  { label: '1 MiB', size: MiB, count: 400, inflight: 4 },
  { label: '16 MiB', size: 16 * MiB, count: 40, inflight: 2 },
  { label: '64 MiB', size: 64 * MiB, count: 10, inflight: 2 },
];
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const gbps = (bytes: number, ns: bigint) => bytes / Number(ns); // bytes per ns = GB/s

/** GB/s of `count` transfers of `size` bytes from `prod` to `cons`, `inflight` at a time. */
async function sidecarThroughput(prod: SidecarClient, cons: SidecarClient, size: number, count: number, inflight: number, tag: string): Promise<number> {
  const data = tensor('u8', [size], new Uint8Array(size).fill(7));
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (next < count) {
      const id = `${tag}-${next++}`;
      await Promise.all([prod.send(data, id, [[cons.rank]]), cons.recv(id)]);
      await cons.markDone(id);
    }
  }));
  return gbps(size * count, process.hrtime.bigint() - start);
}

/** Buffer.copy into `dsts` rotating destinations (the sidecar also writes into that many distinct slots). */
function memcpyThroughput(size: number, count: number, dsts: number): number {
  const src = Buffer.alloc(size, 7);
  const dst = Array.from({ length: dsts }, () => Buffer.alloc(size));
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) src.copy(dst[i % dsts]!);
  return gbps(size * count, process.hrtime.bigint() - start);
}

/** A child process that reads bytes from TCP (or echoes on a unix socket) — the raw baselines. */
const SINK = `
const net = require('node:net');
const [mode, where] = process.argv.slice(1);
const srv = net.createServer((s) => {
  s.setNoDelay(true);
  if (mode === 'echo') { s.on('data', (d) => s.write(d)); return; }
  let want = -1, got = 0, head = Buffer.alloc(0);
  s.on('data', (d) => {
    if (want < 0) { head = Buffer.concat([head, d]); if (head.length < 8) return; want = Number(head.readBigUInt64LE(0)); got = head.length - 8; }
    else got += d.length;
    if (got >= want) { want = -1; got = 0; head = Buffer.alloc(0); s.write('k'); }
  });
});
srv.listen(mode === 'echo' ? where : Number(where), mode === 'echo' ? undefined : '127.0.0.1', () => process.stdout.write('ready'));
`;

async function startSink(mode: 'sink' | 'echo', where: string): Promise<{ child: ChildProcess; sock: Socket }> {
  const child = spawn(process.execPath, ['-e', SINK, mode, where], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  const sock = await new Promise<Socket>((resolve) => {
    const s = mode === 'echo' ? connect(where, () => resolve(s)) : connect({ port: Number(where), host: '127.0.0.1' }, () => resolve(s));
  });
  sock.setNoDelay(true);
  return { child, sock };
}

/** GB/s of writing `count` buffers of `size` bytes to the TCP sink, until it acknowledges all of them. */
async function tcpThroughput(sock: Socket, size: number, count: number): Promise<number> {
  const buf = Buffer.alloc(size, 7);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(size * count));
  const acked = new Promise<void>((r) => sock.once('data', () => r()));
  const start = process.hrtime.bigint();
  sock.write(head);
  for (let i = 0; i < count; i++) if (!sock.write(buf)) await new Promise((r) => sock.once('drain', r));
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

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  // 16 MiB of 4 KiB slots + 384 MiB of 256 KiB slots per node.
  const sc: SidecarCluster = await startSidecars({ nodes: [[0, 1], [2]], slabs: [{ slotBytes: 4096, slots: 4096 }, { slotBytes: 256 * KiB, slots: 1536 }] });
  const dir = mkdtempSync(join(tmpdir(), 'cs-bench-'));
  const tcp = await startSink('sink', String(await freePort()));
  const echo = await startSink('echo', join(dir, 'echo.sock'));
  try {
    const prod = await sc.client(0);
    const local = await sc.client(1);
    const remote = await sc.client(2);
    for (const s of SIZES) {
      await sidecarThroughput(prod, local, s.size, Math.max(2, s.count / 10), s.inflight, `warm-l-${s.label}`);
      await sidecarThroughput(prod, remote, s.size, Math.max(2, s.count / 10), s.inflight, `warm-r-${s.label}`);
      memcpyThroughput(s.size, Math.max(2, s.count / 10), s.inflight);
      await tcpThroughput(tcp.sock, s.size, Math.max(2, s.count / 10));
      const inNode: number[] = [], memcpy: number[] = [], across: number[] = [], raw: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        inNode.push(await sidecarThroughput(prod, local, s.size, s.count, s.inflight, `l-${s.label}-${r}`));
        memcpy.push(memcpyThroughput(s.size, s.count, s.inflight));
        across.push(await sidecarThroughput(prod, remote, s.size, s.count, s.inflight, `r-${s.label}-${r}`));
        raw.push(await tcpThroughput(tcp.sock, s.size, s.count));
      }
      results.push(row(`in-node ${s.label}`, median(inNode), 'GB/s', median(memcpy), 'Buffer.copy', s.size >= MiB ? '≥ 0.5 × memcpy' : undefined,
        `${s.inflight} in flight; baseline copies into ${s.inflight} rotating buffers`));
      results.push(row(`between nodes ${s.label}`, median(across), 'GB/s', median(raw), 'raw TCP loopback', '≥ 0.7 × raw TCP', `${s.inflight} in flight`));
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
    tcp.sock.destroy(); echo.sock.destroy();
    tcp.child.kill(); echo.child.kill();
    await sc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
}
