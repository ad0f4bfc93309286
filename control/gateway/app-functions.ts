/**
 * AppFunctions: the gateway's view of the app-function processes it asked the platform for.
 *
 * start() writes the app's source where the runtime reads it (CORNSERVE_APP_SOURCE), deploys the function
 * and waits for GET /health (bounded; fails fast with the process's last lines if it exits). When a
 * function exits without being asked to, it is restarted with exponential backoff; meanwhile its state is
 * 'restarting' and waitReady() lets invocations wait (bounded) for it to come back.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchSpec } from '../descriptors/types.js';
import type { AppFunctionPlatform, PlatformEvent } from '../platform/types.js';
import type { Logger } from '../../lib/log.js';
import { probe } from '../../lib/unix-url.js';
import { deadlineTimer, sleep, type DeadlineTimer } from '../../lib/wait.js';
import { AppFunctionUnavailableError } from './errors.js';
import { RUNTIME_ENTRY } from './paths.js';
import { HIDDEN_FROM_APPS } from './source-check.js';

export type FunctionState = 'starting' | 'ready' | 'restarting' | 'stopped';

export interface FunctionTarget {
  url: string;
  /** Increases with every (re)start: lets a failed request ask "did this instance crash?". */
  generation: number;
}

interface Entry {
  appId: string;
  name: string;
  source: string;
  state: FunctionState;
  target?: FunctionTarget;
  generation: number;
  /** Resolves with the exit event of the current generation. */
  exited: Promise<PlatformEvent>;
  markExited: (e: PlatformEvent) => void;
  /** Resolved whenever the state changes (for waitReady). */
  changed: Promise<void>;
  notify: () => void;
  crashes: number;
  lastCrashAt: number;
}

export interface AppFunctionsOptions {
  /** The local platform, or the resource manager's HTTP API (ResourceManagerClient) when the gateway runs apart. */
  platform: AppFunctionPlatform;
  dispatcherUrl: string;
  log: Logger;
  /** Folder for app sources. @default a fresh folder under the OS temp dir */
  stateDir?: string;
  /** @default the runtime in functions/runtime */
  launch?: LaunchSpec;
  /** Extra environment for every function (e.g. OTEL_*, CORNSERVE_BODY_LIMIT_BYTES). */
  env?: Record<string, string>;
  /** @default 60 s */
  healthTimeoutMs?: number;
  /** Called on every state change (the gateway mirrors it into the Store). */
  onStateChange?: (appId: string, state: FunctionState) => void;
}

export const RUNTIME_LAUNCH: LaunchSpec = {
  kind: 'app-function',
  entry: RUNTIME_ENTRY,
  image: 'cornserve/app-function',
  args: [],
  devicesPerExecutor: 0,
  healthPath: '/health',
};

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};

export class AppFunctions {
  readonly #entries = new Map<string, Entry>();
  readonly #stateDir: string;
  readonly #unsubscribe: () => void;
  #closed = false;

  constructor(private readonly opts: AppFunctionsOptions) {
    this.#stateDir = opts.stateDir ?? join(tmpdir(), `cornserve-gateway-${process.pid}-${Date.now().toString(36)}`);
    this.#unsubscribe = opts.platform.onEvent((e) => this.#onEvent(e));
  }

  state(appId: string): FunctionState | undefined {
    return this.#entries.get(appId)?.state;
  }

  /** Deploys the app's function and waits until it is healthy. Throws (and leaves nothing running) on failure. */
  async start(app: { appId: string; name: string; source: string }): Promise<FunctionTarget> {
    const { promise: changed, resolve: notify } = deferred<void>();
    const entry: Entry = { ...app, state: 'starting', generation: 0, exited: new Promise<never>(() => {}), markExited: () => {}, changed, notify, crashes: 0, lastCrashAt: 0 };
    this.#entries.set(app.appId, entry);
    try {
      return await this.#launch(entry);
    } catch (e) {
      await this.stop(app.appId);
      throw e;
    }
  }

  /** Stops the function (expected exit: no restart) and forgets it. */
  async stop(appId: string): Promise<void> {
    const entry = this.#entries.get(appId);
    if (entry) this.#setState(entry, 'stopped');
    this.#entries.delete(appId);
    await this.opts.platform.deleteAppFunction(appId);
    await rm(join(this.#stateDir, appId), { recursive: true, force: true });
  }

  /** The function's address once it is ready; waits (until `deadline`) while it starts or restarts. */
  async waitReady(appId: string, deadline: number): Promise<FunctionTarget> {
    for (;;) {
      const entry = this.#entries.get(appId);
      if (!entry || entry.state === 'stopped') throw new AppFunctionUnavailableError(appId, 'it was stopped');
      if (entry.state === 'ready' && entry.target) return entry.target;
      const left = deadline - Date.now();
      if (left <= 0) throw new AppFunctionUnavailableError(entry.name, `it is ${entry.state}`);
      let timer: DeadlineTimer | undefined;
      await Promise.race([entry.changed, new Promise<void>((r) => (timer = deadlineTimer(deadline, r)))]);
      timer?.clear();
    }
  }

  /**
   * True when the instance of `generation` exited within `withinMs` (a crash rather than a dropped connection). The
   * platform may hold exit events back ~250 ms and a loaded machine is slower still: 2 s, paid only on a failed call.
   */
  async crashed(appId: string, generation: number, withinMs = 2_000): Promise<boolean> {
    const entry = this.#entries.get(appId);
    if (!entry) return false;
    if (entry.generation !== generation) return true;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([entry.exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), withinMs)))]);
    clearTimeout(timer);
    return exited;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    await Promise.allSettled([...this.#entries.keys()].map((id) => this.stop(id)));
    await rm(this.#stateDir, { recursive: true, force: true });
  }

  async #launch(entry: Entry): Promise<FunctionTarget> {
    const dir = join(this.#stateDir, entry.appId);
    await mkdir(dir, { recursive: true });
    const sourcePath = join(dir, 'app.ts');
    await writeFile(sourcePath, entry.source);
    const { promise: exited, resolve: markExited } = deferred<PlatformEvent>();
    entry.generation += 1;
    entry.exited = exited;
    entry.markExited = markExited;
    const instance = await this.opts.platform.deployAppFunction({
      appId: entry.appId,
      name: entry.name,
      source: entry.source,
      launch: this.opts.launch ?? RUNTIME_LAUNCH,
      // Platforms pass their own environment on; blanking here keeps the admin token from user code whatever the composition.
      env: { ...this.opts.env, ...Object.fromEntries(HIDDEN_FROM_APPS.map((k) => [k, ''])), CORNSERVE_APP_SOURCE: sourcePath, CORNSERVE_DISPATCHER_URL: this.opts.dispatcherUrl },
    });
    const target = { url: instance.url, generation: entry.generation };
    await this.#waitHealthy(entry, target, exited);
    if (this.#entries.get(entry.appId) !== entry) throw new AppFunctionUnavailableError(entry.name, 'it was stopped while starting');
    entry.target = target;
    this.#setState(entry, 'ready');
    return target;
  }

  async #waitHealthy(entry: Entry, target: FunctionTarget, exited: Promise<PlatformEvent>): Promise<void> {
    const timeoutMs = this.opts.healthTimeoutMs ?? 60_000;
    const end = Date.now() + timeoutMs;
    let died: PlatformEvent | undefined;
    void exited.then((e) => (died = e));
    while (Date.now() < end) {
      if (died) {
        const tail = died.logTail?.slice(-5).join(' | ');
        throw new AppFunctionUnavailableError(entry.name, `its process exited with ${died.signal ?? died.code} while starting${tail ? `: ${tail}` : ''}`);
      }
      try {
        const status = await probe(`${target.url}/health`, 2_000);
        if (status >= 200 && status < 300) return;
      } catch {
        /* not listening yet */
      }
      await sleep(50);
    }
    throw new AppFunctionUnavailableError(entry.name, `it did not become healthy within ${timeoutMs} ms`);
  }

  #setState(entry: Entry, state: FunctionState): void {
    if (entry.state === state) return;
    entry.state = state;
    const notify = entry.notify;
    const next = deferred<void>();
    entry.changed = next.promise;
    entry.notify = next.resolve;
    notify();
    this.opts.onStateChange?.(entry.appId, state);
  }

  #onEvent(e: PlatformEvent): void {
    if (e.kind !== 'app-function-exited') return;
    const entry = this.#entries.get(e.appId);
    if (!entry) return;
    entry.markExited(e);
    if (e.expected || this.#closed || entry.state !== 'ready') return;
    this.opts.log.warn({ appId: e.appId, code: e.code, signal: e.signal, tail: e.logTail?.slice(-5) }, 'app function crashed; restarting');
    if (Date.now() - entry.lastCrashAt > 60_000) entry.crashes = 0; // a crash loop backs off; an occasional crash restarts at once
    entry.lastCrashAt = Date.now();
    this.#setState(entry, 'restarting');
    void this.#restart(entry);
  }

  async #restart(entry: Entry): Promise<void> {
    while (this.#entries.get(entry.appId) === entry && !this.#closed) {
      await sleep(Math.min(30_000, 100 * 2 ** Math.min(entry.crashes, 9)));
      entry.crashes += 1;
      if (this.#entries.get(entry.appId) !== entry || this.#closed) return;
      try {
        await this.#launch(entry);
        this.opts.log.info({ appId: entry.appId }, 'app function restarted');
        return;
      } catch (err) {
        this.opts.log.error({ err, appId: entry.appId }, 'restarting the app function failed; retrying');
        await this.opts.platform.deleteAppFunction(entry.appId).catch(() => {});
      }
    }
  }
}
