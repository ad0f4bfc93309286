/**
 * One sidecar per node for `cornserve up` (apps whose tasks forward tensors — e.g. image-variation — need
 * them). Each is `sidecar/main.ts` as a child process (orphan-guarded like the platform's children, output
 * prefixed through the same log sink), serving the node's global ranks (numbered like the resource
 * manager's inventory: consecutive over the nodes in order) on a unix socket that executors receive as
 * CORNSERVE_SIDECAR_URL=unix:<path>. With a Store URL (`cornserve up --redis`) the sidecars register there and find
 * each other and the chunks they wait for through it (sidecar/ARCHITECTURE.md); without one, one node's sidecar
 * needs no peers.
 * Each is supervised (control/platform/supervised.ts): probed on its GET /health like an executor, restarted with
 * backoff on the same socket when it dies or stops answering (the dead one's shared memory removed first), and
 * listeners hear when a node's sidecar is down and up again.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ManagedChild, stderrSink, type LogSink } from '../platform/child.js';
import { Supervised, type Incarnation, type SupervisedOptions } from '../platform/supervised.js';
import { removeSegmentsOf } from '../../sidecar/shm/segment.js';
import { logger } from '../../lib/log.js';
import type { NodeDevices } from '../../lib/platform.js';
import { REPO_ROOT } from '../gateway/paths.js';
import { makeOwnedTempDir } from '../../lib/temp-dirs.js';
import { withDeadline } from '../../lib/wait.js';

const log = logger('sidecars');

/** The sockets live in `<tmp>/cornserve-sidecars-<pid>-<random>` (a later `up` removes it when that pid is dead). */
export const SIDECARS_DIR_PREFIX = 'cornserve-sidecars-';

export type SidecarState = 'up' | 'down';

export interface NodeSidecars {
  /** node -> `unix:<socket path>` (the same across restarts) */
  urls: Record<string, string>;
  /** node -> whether its sidecar serves now. */
  states(): Record<string, SidecarState>;
  /** Told when a node's sidecar goes down (died, unhealthy) or is up again after a restart. */
  onChange(listener: (node: string, state: SidecarState, reason: string) => void): () => void;
  /** The pid of a node's running sidecar (undefined while it is down). */
  pid(node: string): number | undefined;
  /** Stops every sidecar (no restart) and removes every segment any of them created. */
  stop(): Promise<void>;
}

export interface StartSidecarsOptions {
  nodes: NodeDevices[];
  sink?: LogSink;
  env?: Record<string, string>;
  /** The Redis the sidecars register in (`cornserve up --redis`), and its key prefix. */
  storeUrl?: string;
  storePrefix?: string;
  /** @default 60 s (like the platform's executor and app-function health bounds: a loaded machine starts node + tsx slowly) */
  readyTimeoutMs?: number;
  /** The supervision's probes and restart backoff (control/platform/supervised.ts); tests use short ones. */
  supervision?: Pick<SupervisedOptions, 'healthCheck' | 'restartBackoff' | 'stableAfterMs'>;
}

/** What a sidecar prints once it accepts connections (sidecar/main.ts). */
const ReadyLine = z.object({ ready: z.object({ httpPort: z.number().int().positive() }) });

export async function startNodeSidecars(opts: StartSidecarsOptions): Promise<NodeSidecars> {
  const dir = await makeOwnedTempDir(SIDECARS_DIR_PREFIX);
  const supervised = new Map<string, Supervised>();
  const listeners = new Set<(node: string, state: SidecarState, reason: string) => void>();
  const killAll = () => supervised.forEach((s) => s.kill());
  process.once('exit', killAll);
  const stop = async () => {
    process.removeListener('exit', killAll);
    await Promise.allSettled([...supervised.values()].map((s) => s.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  const urls: Record<string, string> = {};
  try {
    let rank = 0;
    for (const { node, devices } of opts.nodes) {
      if (devices === 0) continue;
      const ranks = Array.from({ length: devices }, () => rank++);
      const socket = join(dir, `${node}.sock`);
      const s = new Supervised({
        name: `sidecar-${node}`,
        log,
        start: () => startSidecar(node, ranks, socket, opts),
        // A SIGKILLed sidecar unlinks nothing: its 512 MiB segment goes before the next one is made (and at stop).
        cleanup: (pid) => {
          const removed = removeSegmentsOf(pid);
          if (removed.length) log.info({ node, pid, removed }, 'removed the shared memory of a sidecar that is gone');
        },
        ...opts.supervision,
      });
      s.onChange((state, reason) => {
        for (const l of listeners) l(node, state, reason);
      });
      supervised.set(node, s);
      await s.start();
      urls[node] = `unix:${socket}`;
    }
    return {
      urls,
      states: () => Object.fromEntries([...supervised].map(([node, s]) => [node, s.state === 'up' ? 'up' : 'down'])),
      onChange: (l) => {
        listeners.add(l);
        return () => void listeners.delete(l);
      },
      pid: (node) => supervised.get(node)?.pid,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** One incarnation of a node's sidecar, ready (it printed its ready line) within opts.readyTimeoutMs. */
async function startSidecar(node: string, ranks: number[], socket: string, opts: StartSidecarsOptions): Promise<Incarnation> {
  let ready: (httpPort: number) => void = () => {};
  const isReady = new Promise<number>((r) => (ready = r));
  const sink = opts.sink ?? stderrSink;
  const child = await ManagedChild.spawn({
    name: `sidecar-${node}`,
    command: process.execPath,
    args: ['--import', 'tsx', '--import', './control/platform/orphan-guard.ts', 'sidecar/main.ts', '--node', node, '--ranks', ranks.join(','), '--socket', socket,
      ...(opts.storeUrl ? ['--store-url', opts.storeUrl, ...(opts.storePrefix ? ['--store-prefix', opts.storePrefix] : [])] : [])],
    cwd: REPO_ROOT,
    env: { ...process.env, ...opts.env, CORNSERVE_PARENT_PID: String(process.pid) },
    sink: (prefix, line, stream) => {
      if (stream === 'stdout' && line.startsWith('{"ready"')) {
        const parsed = ReadyLine.safeParse(parseJson(line));
        if (parsed.success) ready(parsed.data.ready.httpPort);
      }
      sink(prefix, line, stream);
    },
  });
  const started = Promise.race([
    isReady,
    child.exited.then((e) => Promise.reject(new Error(`the sidecar of node ${node} exited with ${e.signal ?? e.code} while starting: ${e.logTail.slice(-3).join(' | ')}`))),
  ]);
  try {
    const httpPort = await withDeadline(`the sidecar of node ${node}`, started, Date.now() + (opts.readyTimeoutMs ?? 60_000));
    return { child, healthUrl: `http://127.0.0.1:${httpPort}` };
  } catch (e) {
    await child.stop(5_000);
    removeSegmentsOf(child.pid);
    throw e;
  }
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
