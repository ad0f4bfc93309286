/**
 * One sidecar per node for `cornserve up` (apps whose tasks forward tensors — e.g. image-variation — need
 * them). Each is `sidecar/main.ts` as a child process (orphan-guarded like the platform's children, output
 * prefixed through the same log sink), serving the node's global ranks (numbered like the resource
 * manager's inventory: consecutive over the nodes in order) on a unix socket that executors receive as
 * CORNSERVE_SIDECAR_URL=unix:<path>. With a Store URL (`cornserve up --redis`) the sidecars register there and find
 * each other and the chunks they wait for through it (sidecar/ARCHITECTURE.md); without one, one node's sidecar
 * needs no peers.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ManagedChild, stderrSink, type LogSink } from '../platform/child.js';
import type { NodeDevices } from '../../lib/platform.js';
import { REPO_ROOT } from '../gateway/paths.js';
import { makeOwnedTempDir } from '../../lib/temp-dirs.js';
import { withDeadline } from '../../lib/wait.js';

/** The sockets live in `<tmp>/cornserve-sidecars-<pid>-<random>` (a later `up` removes it when that pid is dead). */
export const SIDECARS_DIR_PREFIX = 'cornserve-sidecars-';

export interface NodeSidecars {
  /** node -> `unix:<socket path>` */
  urls: Record<string, string>;
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
}

export async function startNodeSidecars(opts: StartSidecarsOptions): Promise<NodeSidecars> {
  const dir = await makeOwnedTempDir(SIDECARS_DIR_PREFIX);
  const children: ManagedChild[] = [];
  const killAll = () => children.forEach((c) => c.kill());
  process.once('exit', killAll);
  const stop = async () => {
    process.removeListener('exit', killAll);
    await Promise.allSettled(children.map((c) => c.stop(5_000)));
    await rm(dir, { recursive: true, force: true });
  };
  const urls: Record<string, string> = {};
  try {
    let rank = 0;
    for (const { node, devices } of opts.nodes) {
      if (devices === 0) continue;
      const ranks = Array.from({ length: devices }, () => rank++);
      const socket = join(dir, `${node}.sock`);
      let ready: () => void = () => {};
      const isReady = new Promise<void>((r) => (ready = r));
      const sink = opts.sink ?? stderrSink;
      const child = await ManagedChild.spawn({
        name: `sidecar-${node}`,
        command: process.execPath,
        args: ['--import', 'tsx', '--import', './control/platform/orphan-guard.ts', 'sidecar/main.ts', '--node', node, '--ranks', ranks.join(','), '--socket', socket,
          ...(opts.storeUrl ? ['--store-url', opts.storeUrl, ...(opts.storePrefix ? ['--store-prefix', opts.storePrefix] : [])] : [])],
        cwd: REPO_ROOT,
        env: { ...process.env, ...opts.env, CORNSERVE_PARENT_PID: String(process.pid) },
        sink: (prefix, line, stream) => {
          if (stream === 'stdout' && line.startsWith('{"ready"')) ready();
          sink(prefix, line, stream);
        },
      });
      children.push(child);
      const started = Promise.race([
        isReady,
        child.exited.then((e) => Promise.reject(new Error(`the sidecar of node ${node} exited with ${e.signal ?? e.code} while starting: ${e.logTail.slice(-3).join(' | ')}`))),
      ]);
      await withDeadline(`the sidecar of node ${node}`, started, Date.now() + (opts.readyTimeoutMs ?? 60_000));
      urls[node] = `unix:${socket}`;
    }
    return { urls, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
