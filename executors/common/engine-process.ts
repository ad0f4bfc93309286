/**
 * The engine runs as a child process of the router (fail-stop, like the reference): the router binds the
 * ZeroMQ link in a private temp dir, spawns `node --import tsx <entry>` with CORNSERVE_ENGINE_IPC pointing
 * there, and waits for the engine's `ready`. When the engine exits, every pending request fails at once with
 * EXECUTOR_ENGINE_DEAD and `alive` turns false (the router's /health answers 503). The engine exits by itself
 * when the router goes away (IPC channel disconnect), so no engine outlives its router.
 *
 * A live engine that stops answering (stopped, stuck in a loop) is found by a heartbeat: the router pings every
 * `heartbeat.everyMs`; past `heartbeat.hungAfterMs` without a pong every pending request fails with
 * EXECUTOR_ENGINE_HUNG, the engine is killed and `alive` turns false, so the platform restarts the executor.
 *
 * Router side: `EngineProcess.start(...)`. Engine side: `EngineServer.connect(...)`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../../lib/log.js';
import { Heartbeat } from '../../policies/heartbeat.js';
import type { HealthPart } from './health.js';
import { EngineClient } from './engine-client.js';
import { ExecutorErrorCode, executorError, type WireError } from '../../lib/executor-errors.js';
import {
  EngineInbound, type EngineOutbound, type EngineWork, type Handlers, type ItemResult, type Tensors, dispatch, refTensors, resultsToWire,
} from '../../lib/executor-protocol.js';
import { ZmqLink, endpoints } from './zmq-link.js';

export const ENGINE_IPC_ENV = 'CORNSERVE_ENGINE_IPC';
/** Milliseconds without a heartbeat answer after which a live engine is taken as hung (tests shorten it). */
export const ENGINE_HUNG_AFTER_ENV = 'CORNSERVE_ENGINE_HUNG_AFTER_MS';

export interface HeartbeatOptions {
  /** @default 1000 */
  everyMs: number;
  /** Generous: the engine's own loop only schedules (workers run the models), so seconds of silence mean it is stuck. @default 15000 */
  hungAfterMs: number;
}

const envMs = z.coerce.number().int().positive();

/** The heartbeat's timing: the defaults, `hungAfterMs` overridden by CORNSERVE_ENGINE_HUNG_AFTER_MS when set. */
export function heartbeatOptions(env: NodeJS.ProcessEnv = process.env): HeartbeatOptions {
  const raw = env[ENGINE_HUNG_AFTER_ENV];
  if (raw === undefined || raw === '') return { everyMs: 1_000, hungAfterMs: 15_000 };
  const parsed = envMs.safeParse(raw);
  if (!parsed.success) throw new Error(`${ENGINE_HUNG_AFTER_ENV}=${raw}: expected a positive whole number of milliseconds`);
  const hungAfterMs = parsed.data;
  return { everyMs: Math.min(1_000, Math.max(50, Math.floor(hungAfterMs / 3))), hungAfterMs };
}

export interface EngineProcessOptions {
  /** The engine module (absolute path), run with `node --import tsx`. */
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  /** How long the engine may take to load its models and report ready. @default 120000 */
  readyTimeoutMs?: number;
  /** @default heartbeatOptions() */
  heartbeat?: HeartbeatOptions;
  log: Logger;
}

export interface EngineExit { code: number | null; signal: NodeJS.Signals | null }

const TSX = import.meta.resolve('tsx');

export class EngineProcess {
  private exitInfo: EngineExit | undefined;
  private stopping = false;
  private hungFor: number | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  readonly exited: Promise<EngineExit>;

  private constructor(
    readonly client: EngineClient,
    private readonly child: ChildProcess,
    private readonly ipcDir: string,
    private readonly log: Logger,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        const how = signal ? `signal ${signal}` : `code ${code}`;
        clearInterval(this.heartbeatTimer);
        if (!this.stopping && this.hungFor === undefined) log.error({ code, signal }, 'engine process exited');
        client.fail(executorError(ExecutorErrorCode.ENGINE_DEAD, `the engine process exited with ${how}`));
        resolve(this.exitInfo);
      });
    });
  }

  /** Spawns the engine and waits for its `ready` (rejects if it exits or times out first; nothing is left running). */
  static async start(o: EngineProcessOptions): Promise<{ engine: EngineProcess; info: Record<string, unknown> }> {
    const ipcDir = mkdtempSync(join(tmpdir(), 'cs-engine-'));
    const client = new EngineClient(ipcDir, o.log);
    await client.bind();
    const child = spawn(process.execPath, ['--import', TSX, o.entry, ...(o.args ?? [])], {
      env: { ...process.env, ...o.env, [ENGINE_IPC_ENV]: ipcDir },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const engine = new EngineProcess(client, child, ipcDir, o.log);
    const ms = o.readyTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const info = await Promise.race([
        client.ready,
        engine.exited.then((e) => Promise.reject(executorError(ExecutorErrorCode.ENGINE_DEAD,
          `the engine exited before it was ready (${e.signal ? `signal ${e.signal}` : `code ${e.code}`})`))),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(executorError(ExecutorErrorCode.ENGINE_START_TIMEOUT, `the engine was not ready within ${ms} ms`)), ms);
        }),
      ]);
      engine.watch(o.heartbeat ?? heartbeatOptions());
      return { engine, info };
    } catch (e) {
      await engine.stop();
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number | undefined { return this.child.pid; }
  get alive(): boolean { return this.exitInfo === undefined && this.client.alive; }

  /** The engine as a part of the router's /health: down when it exited or hung, with the matching code. */
  readonly health: HealthPart = ((e: EngineProcess) => ({
    name: 'engine',
    up: () => e.alive,
    get code() { return e.hungFor === undefined ? ExecutorErrorCode.ENGINE_DEAD : ExecutorErrorCode.ENGINE_HUNG; },
    get message() {
      return e.hungFor === undefined ? 'the engine process is not running' : `the engine stopped answering its heartbeat for ${e.hungFor} ms and was killed`;
    },
  }))(this);

  private watch(o: HeartbeatOptions): void {
    const beat = new Heartbeat(o.hungAfterMs);
    this.client.onPong = () => beat.answered();
    let seq = 0;
    this.heartbeatTimer = setInterval(() => {
      if (beat.hung) return this.hung(beat.silentMs());
      this.client.ping(seq++);
    }, o.everyMs);
    this.heartbeatTimer.unref();
  }

  /** Fails what is pending with ENGINE_HUNG (first, so that code wins over the exit's), then kills the engine. */
  private hung(silentMs: number): void {
    clearInterval(this.heartbeatTimer);
    this.hungFor = silentMs;
    this.log.error({ pid: this.child.pid, silentMs, pending: this.client.inflight }, 'the engine stopped answering its heartbeat; killing it');
    this.client.fail(executorError(ExecutorErrorCode.ENGINE_HUNG, `the engine stopped answering for ${silentMs} ms (its process lives but does not run)`));
    this.child.kill('SIGKILL');
  }

  /** SIGTERM, then SIGKILL after `graceMs`; removes the ipc dir. Idempotent. */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopping = true;
    clearInterval(this.heartbeatTimer);
    if (!this.exitInfo) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.client.close();
    rmSync(this.ipcDir, { recursive: true, force: true });
    this.log.debug('engine stopped');
  }
}

/** Engine side of the link. */
export class EngineServer {
  private readonly link: ZmqLink<EngineInbound, EngineOutbound>;

  private constructor(private readonly log: Logger) {
    this.link = new ZmqLink(EngineInbound, 'router → engine', log);
  }

  /** Connects to the router that spawned this process; exits the process when the router goes away. */
  static connect(log: Logger, onParentGone: () => Promise<void> | void = () => undefined): EngineServer {
    const dir = process.env[ENGINE_IPC_ENV];
    if (!dir) throw new Error(`${ENGINE_IPC_ENV} is not set: the engine is started by its router (EngineProcess.start)`);
    const s = new EngineServer(log);
    const ep = endpoints(dir);
    s.link.connect(ep.toRouter, ep.toEngine);
    const gone = async () => {
      log.warn('the router went away; engine exiting');
      await onParentGone();
      process.exit(0);
    };
    // Not connected: the router died while this engine started, and its 'disconnect' came (or is queued) before any
    // listener. Either way gone() runs once, not again when a queued 'disconnect' is emitted.
    if (process.connected) process.once('disconnect', () => void gone());
    else void gone();
    return s;
  }

  /** Starts receiving; handler errors are logged (a bad request must not kill the engine). */
  listen(work: Handlers<EngineWork>): void {
    const handlers: Handlers<EngineInbound> = { ...work, ping: (m) => this.link.send({ type: 'pong', seq: m.seq }) };
    void this.link.receive((p) => {
      try {
        const r = dispatch(handlers, p.header, p.blobs);
        if (r instanceof Promise) r.catch((e: Error) => this.log.error({ err: e.message }, 'engine handler failed'));
      } catch (e) {
        this.log.error({ err: (e as Error).message }, 'engine handler failed');
      }
    });
  }

  ready(info: Record<string, unknown>): Promise<void> {
    return this.link.send({ type: 'ready', info });
  }

  /** Answers a request: ok when there is no request-level error and every item succeeded. */
  respond(requestId: string, items: readonly ItemResult[], error?: WireError): Promise<void> {
    const blobs: Uint8Array[] = [];
    const ok = !error && items.every((i) => i.ok);
    return this.link.send({ type: 'response', requestId, ok, items: resultsToWire(items, blobs), ...(error ? { error } : {}) }, blobs);
  }

  stream(requestId: string, itemId: string, seq: number, meta?: Record<string, unknown>, tensors?: Tensors): Promise<void> {
    const blobs: Uint8Array[] = [];
    return this.link.send({ type: 'stream', requestId, itemId, seq, ...(meta ? { meta } : {}), tensors: refTensors(tensors, blobs) }, blobs);
  }

  close(): void {
    this.link.close();
  }
}
