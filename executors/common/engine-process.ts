/**
 * The engine runs as a child process of the router (fail-stop, like the reference): the router binds the
 * ZeroMQ link in a private temp dir, spawns `node --import tsx <entry>` with CORNSERVE_ENGINE_IPC pointing
 * there, and waits for the engine's `ready`. When the engine exits, every pending request fails at once with
 * EXECUTOR_ENGINE_DEAD and `alive` turns false (the router's /health answers 503). The engine exits by itself
 * when the router goes away (IPC channel disconnect), so no engine outlives its router.
 *
 * Router side: `EngineProcess.start(...)`. Engine side: `EngineServer.connect(...)`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../lib/log.js';
import { EngineClient } from './engine-client.js';
import { ExecutorErrorCode, executorError, type WireError } from '../../lib/executor-errors.js';
import {
  EngineInbound, type EngineOutbound, type Handlers, type ItemResult, type Tensors, dispatch, refTensors, resultsToWire,
} from '../../lib/executor-protocol.js';
import { ZmqLink, endpoints } from './zmq-link.js';

export const ENGINE_IPC_ENV = 'CORNSERVE_ENGINE_IPC';

export interface EngineProcessOptions {
  /** The engine module (absolute path), run with `node --import tsx`. */
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  /** How long the engine may take to load its models and report ready. @default 120000 */
  readyTimeoutMs?: number;
  log: Logger;
}

export interface EngineExit { code: number | null; signal: NodeJS.Signals | null }

const TSX = import.meta.resolve('tsx');

export class EngineProcess {
  private exitInfo: EngineExit | undefined;
  private stopping = false;
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
        if (!this.stopping) log.error({ code, signal }, 'engine process exited');
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

  /** SIGTERM, then SIGKILL after `graceMs`; removes the ipc dir. Idempotent. */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopping = true;
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
  listen(handlers: Handlers<EngineInbound>): void {
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
