/**
 * Sidecar fixture: starts sidecar server child processes standing for K nodes on loopback and stops them.
 *
 *   const sc = await startSidecars({ nodes: [[0, 1], [2, 3]] });   // node n0 serves ranks 0,1; n1 serves 2,3
 *   const a = await sc.client(0); const b = await sc.client(2);
 *   ...
 *   await sc.stop();                                             // clients closed, servers stopped, segments unlinked
 *
 * Each node keeps its socket path and ports across `restart()`, like a real sidecar pod would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../lib/net.js';
import { SidecarClient, type SidecarClientOptions } from '../../sidecar/client/client.js';
import type { SlabSpec } from '../../sidecar/shm/memory.js';

const MAIN = fileURLToPath(new URL('../../sidecar/main.ts', import.meta.url));

export interface StartSidecarsOptions {
  /** Ranks per node; node i is named `n<i>`. */
  nodes: number[][];
  /** @default 4 MiB of 4 KiB slots + 16 MiB of 256 KiB slots per node */
  slabs?: SlabSpec[];
  ttlMs?: number;
  sweepMs?: number;
  /** The Store the sidecars register in and record chunk entries in. */
  storeUrl?: string;
  storePrefix?: string;
  /** 'store': no `--peer` flags, the sidecars find each other through `storeUrl`. @default 'fixed' */
  peers?: 'fixed' | 'store';
  leaseMs?: number;
}

export interface SidecarNode {
  readonly name: string;
  readonly ranks: number[];
  readonly socketPath: string;
  readonly peerPort: number;
  readonly httpUrl: string;
  pid(): number | undefined;
  health(): Promise<Record<string, unknown> & { bytesInUse: number; inlineBytes: number; chunks: number; segment: string }>;
  metrics(): Promise<string>;
  /** Graceful stop (SIGTERM). */
  stop(): Promise<void>;
  /** Crash (SIGKILL): nothing is cleaned up by the process itself. */
  kill(): Promise<void>;
  /** Starts the node's sidecar again (same socket, same ports unless `newPorts`). */
  start(o?: { newPorts?: boolean }): Promise<void>;
}

export interface SidecarCluster {
  readonly nodes: SidecarNode[];
  nodeOf(rank: number): SidecarNode;
  /** A connected client for `rank` (closed by `stop()`). */
  client(rank: number, opts?: Partial<SidecarClientOptions>): Promise<SidecarClient>;
  stop(): Promise<void>;
}

export const TEST_SLABS: SlabSpec[] = [{ slotBytes: 4096, slots: 1024 }, { slotBytes: 256 * 1024, slots: 64 }];

const waitExit = (c: ChildProcess, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    c.once('exit', () => { clearTimeout(t); resolve(true); });
  });

export async function startSidecars(opts: StartSidecarsOptions): Promise<SidecarCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cs-sidecar-'));
  const specs = await Promise.all(opts.nodes.map(async (ranks, i) => ({
    name: `n${i}`, ranks, socketPath: join(dir, `n${i}.sock`), peerPort: await freePort(), httpPort: await freePort(),
  })));
  const children = new Set<ChildProcess>();
  const killAll = () => { for (const c of children) c.kill('SIGKILL'); };
  process.once('exit', killAll);

  const nodes: SidecarNode[] = specs.map((spec) => {
    let child: ChildProcess | undefined;
    const args = () => [
      ...(process.env.SIDECAR_NODE_ARGS?.split(' ').filter(Boolean) ?? []), // e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' to profile
      '--import', 'tsx', MAIN, '--node', spec.name, '--ranks', spec.ranks.join(','), '--socket', spec.socketPath,
      '--peer-port', String(spec.peerPort), '--http-port', String(spec.httpPort),
      ...(opts.peers === 'store' ? [] : specs.filter((p) => p !== spec).flatMap((p) => ['--peer', `${p.name}=127.0.0.1:${p.peerPort}@${p.ranks.join(',')}`])),
      ...(opts.slabs ?? TEST_SLABS).flatMap((s) => ['--slab', `${s.slotBytes}x${s.slots}`]),
      ...(opts.ttlMs ? ['--ttl-ms', String(opts.ttlMs)] : []),
      ...(opts.sweepMs ? ['--sweep-ms', String(opts.sweepMs)] : []),
      ...(opts.storeUrl ? ['--store-url', opts.storeUrl, '--store-prefix', opts.storePrefix ?? 'cornserve:'] : []),
      ...(opts.leaseMs ? ['--lease-ms', String(opts.leaseMs)] : []),
    ];
    const start = async (o: { newPorts?: boolean } = {}) => {
      if (o.newPorts) { spec.peerPort = await freePort(); spec.httpPort = await freePort(); }
      const c = spawn(process.execPath, args(), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'test' } });
      child = c;
      children.add(c);
      c.once('exit', () => children.delete(c));
      let err = '';
      c.stderr!.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const t = setTimeout(() => reject(new Error(`sidecar ${spec.name} did not start within 60 s: ${err}`)), 60_000);
        c.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('"ready"')) { clearTimeout(t); resolve(); }
        });
        c.once('exit', (code) => { clearTimeout(t); reject(new Error(`sidecar ${spec.name} exited with ${code}: ${err}`)); });
      });
      c.stdout!.resume();
    };
    const stopWith = async (sig: NodeJS.Signals) => {
      const c = child;
      if (!c) return;
      c.kill(sig);
      if (!(await waitExit(c, 10_000))) { c.kill('SIGKILL'); await waitExit(c, 5_000); }
    };
    const httpUrl = () => `http://127.0.0.1:${spec.httpPort}`;
    return {
      name: spec.name, ranks: spec.ranks, socketPath: spec.socketPath,
      get peerPort() { return spec.peerPort; },
      get httpUrl() { return httpUrl(); },
      pid: () => child?.pid,
      health: async () => (await (await fetch(`${httpUrl()}/health`)).json()) as never,
      metrics: async () => (await fetch(`${httpUrl()}/metrics`)).text(),
      stop: () => stopWith('SIGTERM'),
      kill: () => stopWith('SIGKILL'),
      start,
    };
  });

  const clients: SidecarClient[] = [];
  try {
    await Promise.all(nodes.map((n) => n.start()));
  } catch (err) {
    killAll();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const nodeOf = (rank: number) => {
    const n = nodes.find((x) => x.ranks.includes(rank));
    if (!n) throw new Error(`no node serves rank ${rank}`);
    return n;
  };
  return {
    nodes,
    nodeOf,
    async client(rank, o = {}) {
      const c = await SidecarClient.connect({ rank, socketPath: nodeOf(rank).socketPath, timeoutMs: 20_000, ...o });
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) c.close();
      await Promise.all(nodes.map((n) => n.stop()));
      process.off('exit', killAll);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
