/**
 * Executor fixtures for control-plane tests:
 *  - startEchoExecutor(): a REAL echo executor child process (`node --import tsx executors/echo/main.ts`) on a free port;
 *  - startBrokenStreamExecutor(): a misbehaving executor whose NDJSON reply drops its connection mid-way;
 *  - deployTask(): puts a unit task (state `ready`) and its executor routes into a Store, the way a task manager would.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { unitTaskKey, type UnitTask } from '../../functions/sdk/index.js';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { taskIdOf } from '../../control/store/task-id.js';
import type { ExecutorRoute, ExecutorState, Store, UnitTaskState } from '../../lib/store.js';
import { freePort } from '../../lib/net.js';
import { startServerProcess } from './server-process.js';

export interface EchoExecutorInfo {
  kind: 'echo';
  executorId: string | null;
  inFlight: number;
  served: number;
  maxConcurrency: number | null;
  /** Requests waiting for a slot (past maxConcurrency). */
  queued: number;
}

export interface EchoExecutor {
  readonly executorId: string;
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  /** GET /info: requests in flight and served so far. */
  info(): Promise<EchoExecutorInfo>;
  /** Kills the process (default SIGKILL: a crash) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM and wait; idempotent. */
  stop(): Promise<void>;
}

export interface EchoExecutorOptions {
  executorId?: string;
  /** Default simulated work per request (requests from the echo descriptor carry their own). */
  serviceTimeMs?: number;
  /** Requests served at once; the rest queue in the executor. */
  maxConcurrency?: number;
  /** How long to wait for GET /health (a loaded 2-core machine can take long to start tsx). @default 45000 */
  startTimeoutMs?: number;
}

let started = 0;

export async function startEchoExecutor(options: EchoExecutorOptions = {}): Promise<EchoExecutor> {
  const executorId = options.executorId ?? `echo-${process.pid}-${++started}`;
  const p = await startServerProcess({
    what: `echo executor ${executorId}`,
    entry: 'executors/echo/main.ts',
    args: ['--service-time-ms', String(options.serviceTimeMs ?? 0), ...(options.maxConcurrency ? ['--max-concurrency', String(options.maxConcurrency)] : [])],
    env: { [EXECUTOR_ENV.executorId]: executorId },
    ...(options.startTimeoutMs ? { startTimeoutMs: options.startTimeoutMs } : {}),
  });
  return {
    executorId,
    port: p.port,
    url: p.url,
    process: p.child,
    info: async () => (await (await fetch(new URL('/info', p.url))).json()) as EchoExecutorInfo,
    kill: p.kill,
    stop: p.stop,
  };
}


export interface RouteSpec {
  url: string;
  executorId?: string;
  sidecarRanks?: number[];
  state?: ExecutorState;
  outstanding?: number;
}

/**
 * Registers `task` in the Store (acquireTask, then updateTask to `state`, default ready) with one route per
 * spec (default state ready). Returns the task id and the routes as stored.
 */
export async function deployTask(
  store: Store,
  task: UnitTask,
  routes: RouteSpec[],
  state: UnitTaskState = 'ready',
): Promise<{ taskId: string; routes: ExecutorRoute[] }> {
  const taskId = taskIdOf(task);
  await store.acquireTask({
    taskId,
    key: unitTaskKey(task),
    taskClass: task.rootClass.name,
    task: task.toJSON(),
    state: 'deploying',
    devices: [],
    updatedAt: Date.now(),
  });
  if (state !== 'deploying') await store.updateTask(taskId, { state });
  const stored: ExecutorRoute[] = [];
  for (const [n, spec] of routes.entries()) {
    const ranks = spec.sidecarRanks ?? [n];
    const route: ExecutorRoute = {
      executorId: spec.executorId ?? `${taskId}-x${n}`,
      taskId,
      url: spec.url,
      sidecarRanks: ranks,
      devices: ranks.map((r, local) => ({ node: 'node-test', globalRank: r, localRank: local })),
      state: spec.state ?? 'ready',
      outstanding: spec.outstanding ?? 0,
      startedAt: Date.now(),
    };
    await store.putExecutor(route);
    stored.push(route);
  }
  return { taskId, routes: stored };
}

/** The outstanding count of every executor in the Store, by executor id. */
export async function outstandingByExecutor(store: Store): Promise<Record<string, number>> {
  return Object.fromEntries((await store.listExecutors()).map((r) => [r.executorId, r.outstanding]));
}

/** A URL where nothing listens (a freshly freed port). */
export async function closedPortUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

/** A misbehaving streaming executor (see startBrokenStreamExecutor). */
export interface BrokenStreamExecutor {
  readonly url: string;
  /** Requests whose connection is still open. */
  open(): number;
  close(): Promise<void>;
}

/**
 * An executor that fails in the middle of a stream: answers every POST with 200 NDJSON and writes `lines`,
 * then either drops the connection (`then: 'drop'`, as a crashed executor would) or goes silent and keeps
 * it open forever (`then: 'stall'`, as a hung one would).
 */
export async function startBrokenStreamExecutor(lines: unknown[], then: 'drop' | 'stall' = 'drop'): Promise<BrokenStreamExecutor> {
  let open = 0;
  const server = createServer((req, res) => {
    open++;
    res.once('close', () => open--);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), () => {
      if (then === 'drop') setTimeout(() => res.socket?.destroy(), 50);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    open: () => open,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
