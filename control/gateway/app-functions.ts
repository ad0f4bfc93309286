/**
 * AppFunctions: the gateway's view of the app-function processes it asked the platform for.
 *
 * start() writes the app's source where the runtime reads it (CORNSERVE_APP_SOURCE), deploys the function
 * and waits for GET /health (bounded; fails fast with the process's last lines if it exits). When a
 * function exits without being asked to, it is restarted with exponential backoff; meanwhile its state is
 * 'restarting' and waitReady() lets invocations wait (bounded) for it to come back.
 *
 * A function whose event loop is blocked (an endless loop in serve()) cannot report itself, so a watcher on this
 * side probes every ready function's GET /health; one that has not answered for `blockedLimitMs`
 * (BlockedLoopWatch decides) is killed and restarted like a crashed one, and the requests it held fail with
 * APP_FUNCTION_BLOCKED naming the app (failure()).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchSpec } from '../../lib/descriptor.js';
import type { AppFunctionPlatform, PlatformEvent } from '../../lib/platform.js';
import type { Logger } from '../../lib/log.js';
import { probe } from '../../lib/unix-url.js';
import { ownedName } from '../../lib/temp-dirs.js';
import { deadlineTimer, sleep, type DeadlineTimer } from '../../lib/wait.js';
import { BlockedLoopWatch, DEFAULT_BLOCKED_LIMIT_MS } from './blocked-loop.js';
import { AppFunctionBlockedError, AppFunctionFailedError, AppFunctionUnavailableError } from './errors.js';
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
  /** Watches the loop of the ready instance (none while it starts or restarts). */
  watch?: BlockedLoopWatch;
  probing: boolean;
  /** The generation killed for a blocked loop (its failed requests get APP_FUNCTION_BLOCKED). */
  killed?: { generation: number; blockedMs: number };
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
  /**
   * Kill and restart a ready function whose GET /health has not answered for this long (its event loop is
   * blocked: an endless loop in user code). 0 turns the watcher off. @default 30 s
   */
  blockedLimitMs?: number;
}


/** App sources live in `<tmp>/cornserve-gateway-<pid>-<time>/<appId>/app.ts` (removed on close, or by the next `up` after a kill -9). */
export const APP_SOURCES_DIR_PREFIX = 'cornserve-gateway-';

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
  readonly #blockedLimitMs: number;
  readonly #watchTickMs: number;
  readonly #watcher: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(private readonly opts: AppFunctionsOptions) {
    this.#stateDir = opts.stateDir ?? join(tmpdir(), `${ownedName(APP_SOURCES_DIR_PREFIX)}${Date.now().toString(36)}`);
    this.#unsubscribe = opts.platform.onEvent((e) => this.#onEvent(e));
    this.#blockedLimitMs = opts.blockedLimitMs ?? DEFAULT_BLOCKED_LIMIT_MS;
    // A few probes per limit, at most one a second per function (cheap: a GET over a unix socket).
    this.#watchTickMs = Math.min(1_000, Math.max(50, Math.floor(this.#blockedLimitMs / 4)));
    if (this.#blockedLimitMs > 0) {
      this.#watcher = setInterval(() => this.#watchLoops(), this.#watchTickMs);
      this.#watcher.unref();
    }
  }

  /** Where the ready functions listen (GET /metrics sums their dispatch metrics). */
  readyUrls(): string[] {
    return [...this.#entries.values()].flatMap((e) => (e.state === 'ready' && e.target ? [e.target.url] : []));
  }

  state(appId: string): FunctionState | undefined {
    return this.#entries.get(appId)?.state;
  }

  /** Deploys the app's function and waits until it is healthy. Throws (and leaves nothing running) on failure. */
  async start(app: { appId: string; name: string; source: string }): Promise<FunctionTarget> {
    const { promise: changed, resolve: notify } = deferred<void>();
    const entry: Entry = { ...app, state: 'starting', generation: 0, exited: new Promise<never>(() => {}), markExited: () => {}, changed, notify, crashes: 0, lastCrashAt: 0, probing: false };
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

  /**
   * The function's address once it is ready; waits (until `deadline`) while it starts or restarts. A ready function's
   * address is returned as it is, not in a promise: the invoke path then takes no extra turn of the microtask queue.
   */
  waitReady(appId: string, deadline: number): FunctionTarget | Promise<FunctionTarget> {
    const entry = this.#entries.get(appId);
    return entry?.state === 'ready' && entry.target ? entry.target : this.#waitReady(appId, deadline);
  }

  async #waitReady(appId: string, deadline: number): Promise<FunctionTarget> {
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

  /**
   * The error for a request whose connection to the instance of `generation` failed before any reply: the
   * instance was killed for a blocked loop, it crashed, or it dropped the connection.
   */
  async failure(appId: string, generation: number, err: Error): Promise<Error> {
    const name = this.#entries.get(appId)?.name ?? appId;
    const crashed = await this.crashed(appId, generation);
    const killed = this.#entries.get(appId)?.killed;
    if (killed?.generation === generation) return new AppFunctionBlockedError(name, killed.blockedMs, this.#blockedLimitMs);
    return new AppFunctionFailedError(name, crashed, err.message);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watcher);
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
    if (this.#blockedLimitMs > 0) entry.watch = new BlockedLoopWatch({ limitMs: this.#blockedLimitMs, tickMs: this.#watchTickMs }, Date.now());
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
    this.#beginRestart(entry);
    void this.#restart(entry);
  }

  #beginRestart(entry: Entry): void {
    if (Date.now() - entry.lastCrashAt > 60_000) entry.crashes = 0; // a crash loop backs off; an occasional crash restarts at once
    entry.lastCrashAt = Date.now();
    entry.watch = undefined;
    this.#setState(entry, 'restarting');
  }

  /** One watcher tick: probe every ready function (one probe at a time each) and kill those blocked too long. */
  #watchLoops(): void {
    const now = Date.now();
    for (const entry of this.#entries.values()) {
      const { watch, target } = entry;
      if (entry.state !== 'ready' || !watch || !target) continue;
      if (!entry.probing) {
        entry.probing = true;
        probe(`${target.url}/health`, this.#blockedLimitMs)
          .then((status) => {
            if (status >= 200 && status < 300) watch.answered(Date.now());
          }, () => { /* no answer: the verdict counts the silence; an exit is reported by the platform */ })
          .finally(() => (entry.probing = false));
      }
      const verdict = watch.tick(now);
      if (verdict.kill) void this.#killBlocked(entry, verdict.blockedMs);
    }
  }

  /** Kills a function whose loop is blocked and restarts it (its in-flight requests fail with APP_FUNCTION_BLOCKED). */
  async #killBlocked(entry: Entry, blockedMs: number): Promise<void> {
    this.opts.log.error(
      { appId: entry.appId, app: entry.name, blockedMs, limitMs: this.#blockedLimitMs },
      `the event loop of app ${entry.name}'s function has not answered for ${blockedMs} ms (limit ${this.#blockedLimitMs} ms): killing and restarting it`,
    );
    entry.killed = { generation: entry.generation, blockedMs };
    this.#beginRestart(entry);
    await this.opts.platform.deleteAppFunction(entry.appId).catch((err) => this.opts.log.warn({ err, appId: entry.appId }, 'stopping the blocked app function failed'));
    await this.#restart(entry);
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
