/**
 * The task manager of one unit task: starts its executors through the platform (one per group of
 * `devicesPerExecutor` devices), waits until each is healthy, keeps its routes in the Store
 * (starting -> ready; failed while restarting; draining on removal), probes every ready executor's health
 * (GET healthPath every `healthCheck.intervalMs`), restarts an executor that dies or is judged unhealthy
 * (same devices, same id, same port when possible, exponential backoff bounded by `restartBackoff.maxMs`;
 * the rules are in health-policy.ts), and drains on removal: stop routing, let in-flight requests (the
 * route's `outstanding`) finish within a grace period, then stop the process and delete the route.
 * An unhealthy executor's route turns `failed` at once, so dispatchers stop routing to it before it is stopped.
 *
 * Concurrency: the resource manager serialises add/remove/stop calls per task; restarts run on their own and
 * step aside (abort) when their executor is removed.
 */
import { isCornserveError as isError } from '../../functions/sdk/errors.js';
import type { LaunchSpec } from '../../lib/descriptor.js';
import type { Platform, PlatformEvent } from '../../lib/platform.js';
import type { DeviceRef, ExecutorRoute, ExecutorState, Store } from '../../lib/store.js';
import { logger, type Logger } from '../../lib/log.js';
import { sleep, TimeoutError } from '../../lib/wait.js';
import { ExecutorRemovedError, ExecutorStartError, ExecutorStartTimeoutError } from './errors.js';
import { probeExecutor, waitHealthy } from './health.js';
import { ExecutorHealth } from './health-policy.js';

export interface TaskManagerOptions {
  taskId: string;
  /** Base of executor ids (the descriptor's executorName); ids are `<name>-<global ranks>`. */
  executorName: string;
  launch: LaunchSpec;
  store: Store;
  platform: Platform;
  /** Extra environment for every executor. */
  env?: Record<string, string>;
  /** Bound on one executor's start (process up + GET healthPath 200). @default 60000 */
  healthTimeoutMs?: number;
  /** @default 100 */
  healthIntervalMs?: number;
  /** How long a removed executor may keep serving its in-flight requests. @default 30000 */
  drainGraceMs?: number;
  /** @default 50 */
  drainPollMs?: number;
  /** SIGTERM -> SIGKILL grace when stopping a process. @default 5000 */
  stopGraceMs?: number;
  /** Delay before restart n is initialMs * 2^n, at most maxMs. @default {initialMs: 250, maxMs: 10000} */
  restartBackoff?: { initialMs?: number; maxMs?: number };
  /** An executor healthy this long has its backoff reset. @default 30000 */
  stableAfterMs?: number;
  /**
   * Health checks of ready executors: a probe every `intervalMs` (0 turns them off), each bounded by `timeoutMs`;
   * `unansweredLimit` probes in a row without an answer make an executor unhealthy (a non-200 answer does at once).
   * @default {intervalMs: 1000, timeoutMs: 2000, unansweredLimit: 3}
   */
  healthCheck?: { intervalMs?: number; timeoutMs?: number; unansweredLimit?: number };
  /** The clock of the health and backoff decisions. @default Date.now */
  now?: () => number;
  log?: Logger;
}

type Phase = 'starting' | 'running' | 'restarting' | 'draining' | 'stopped';

/** What the task manager knows about one executor. */
export interface ExecutorView {
  executorId: string;
  devices: DeviceRef[];
  phase: Phase;
  url: string | undefined;
  startedAt: number;
  restarts: number;
}

interface Slot {
  executorId: string;
  devices: DeviceRef[];
  startedAt: number;
  phase: Phase;
  url?: string;
  port?: number;
  /** Health verdicts and the restart backoff of this executor. */
  health: ExecutorHealth;
  totalRestarts: number;
  restartTimer?: NodeJS.Timeout;
  /** The next health probe. */
  probeTimer?: NodeJS.Timeout;
  /** The start or restart in progress. */
  pending?: Promise<void>;
  /** Called with the exit event of the current process. */
  onExit?: (e: ExitEvent) => void;
  removed: AbortController;
}

type ExitEvent = Extract<PlatformEvent, { kind: 'executor-exited' }>;

/** What adoptExecutors() did, by executor id. */
export interface AdoptionOutcome {
  /** Healthy: kept as they were (same process). */
  kept: string[];
  /** Gone or unhealthy: restarted and serving again. */
  restarted: string[];
  /** Gone or unhealthy, and the restart failed: retried with backoff like any crashed executor. */
  restarting: string[];
}

export class TaskManager {
  readonly taskId: string;
  private readonly slots = new Map<string, Slot>();
  private readonly log: Logger;
  private readonly off: () => void;
  private closed = false;
  /** Nodes whose sidecar is down (setSidecarDown): this task's executors there are out of the routes. */
  private readonly sidecarDown = new Set<string>();

  constructor(private readonly opts: TaskManagerOptions) {
    this.taskId = opts.taskId;
    this.log = opts.log ?? logger('taskmanager', { task: opts.taskId });
    this.off = opts.platform.onEvent((e) => this.onPlatformEvent(e));
  }

  /** Executors by age (oldest first). */
  executors(): ExecutorView[] {
    return this.ordered().map((s) => ({
      executorId: s.executorId,
      devices: s.devices,
      phase: s.phase,
      url: s.url,
      startedAt: s.startedAt,
      restarts: s.totalRestarts,
    }));
  }

  /**
   * A node's sidecar went down (or is back): when this task's executors move tensors, the ones on that node leave
   * the routes (route `failed`, the process kept) until it is back, then are routed to again.
   */
  setSidecarDown(node: string, down: boolean): void {
    if (!this.opts.launch.movesTensors || down === this.sidecarDown.has(node)) return;
    if (down) this.sidecarDown.add(node);
    else this.sidecarDown.delete(node);
    this.log.warn({ node }, down ? 'the node\'s sidecar is down: its executors of this task leave the routes' : 'the node\'s sidecar is back: its executors of this task are routed to again');
    for (const s of this.slots.values()) if (s.phase === 'running' && s.devices[0]!.node === node) this.setState(s, this.servingState(s));
  }

  /** Nodes where this task's executors are held out of the routes because the sidecar is down. */
  sidecarDownNodes(): string[] {
    return [...this.sidecarDown].filter((node) => this.ordered().some((s) => s.devices[0]!.node === node));
  }

  private servingState(slot: Slot): ExecutorState {
    return this.sidecarDown.has(slot.devices[0]!.node) ? 'failed' : 'ready';
  }

  /** Devices of every executor not yet stopped. */
  devices(): DeviceRef[] {
    return this.ordered().flatMap((s) => s.devices);
  }

  /**
   * Starts one executor per device group and waits until all are ready. All or nothing: when one fails,
   * the others started by this call are stopped and their routes deleted, and the first error is thrown.
   */
  async addExecutors(groups: DeviceRef[][]): Promise<ExecutorView[]> {
    if (this.closed) throw new Error(`task manager ${this.taskId} is stopped`);
    const slots = groups.map((devices) => this.newSlot(devices));
    const results = await Promise.allSettled(slots.map((s) => (s.pending = this.start(s))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.allSettled(slots.map((s) => this.retire(s, { drain: false })));
      throw failed.reason;
    }
    return this.executors().filter((v) => slots.some((s) => s.executorId === v.executorId));
  }

  /** Drains and stops the `count` oldest executors; returns the devices they had. */
  async removeExecutors(count: number, options: { graceMs?: number } = {}): Promise<DeviceRef[]> {
    const victims = this.ordered().slice(0, count);
    await Promise.all(victims.map((s) => this.retire(s, { drain: true, graceMs: options.graceMs })));
    return victims.flatMap((s) => s.devices);
  }

  /** Drains (unless `drain: false`) and stops every executor, deletes their routes; the manager is done afterwards. */
  async stop(options: { drain?: boolean; graceMs?: number } = {}): Promise<DeviceRef[]> {
    this.closed = true;
    const mine = this.ordered(); // those already draining belong to a removeExecutors() call, which returns their devices
    await Promise.all([...this.slots.values()].map((s) => this.retire(s, { drain: options.drain ?? true, graceMs: options.graceMs })));
    this.off();
    return mine.flatMap((s) => s.devices);
  }

  /**
   * Takes over executors a previous resource manager started (their routes are in the Store), without restarting
   * them: each is health-checked (GET healthPath, bounded by its `timeoutMs`, failing at once when the platform
   * reports its exit); a healthy one is kept as it is (route `ready`, same process), one that is gone or
   * unhealthy is stopped through the platform and restarted on its devices (the usual restart, with backoff
   * when it fails again). From then on they are managed like executors this manager started. Never throws for
   * an executor's health; resolves once every adoptee is either serving or waiting for a restart.
   */
  async adoptExecutors(adoptees: Array<{ route: ExecutorRoute; timeoutMs: number }>): Promise<AdoptionOutcome> {
    if (this.closed) throw new Error(`task manager ${this.taskId} is stopped`);
    const slots = adoptees.map(({ route }) => this.adoptSlot(route));
    const outcome: AdoptionOutcome = { kept: [], restarted: [], restarting: [] };
    await Promise.all(
      adoptees.map(async ({ timeoutMs }, i) => {
        const slot = slots[i]!;
        const done = this.takeOver(slot, timeoutMs);
        slot.pending = done.then(() => {});
        const kept = await done;
        if (kept) outcome.kept.push(slot.executorId);
        else if (slot.phase === 'running') outcome.restarted.push(slot.executorId);
        else if (slot.phase === 'restarting') outcome.restarting.push(slot.executorId);
      }),
    );
    return outcome;
  }

  // ---------- starting ----------

  private adoptSlot(route: ExecutorRoute): Slot {
    if (this.slots.has(route.executorId)) throw new Error(`executor ${route.executorId} already exists`);
    const slot: Slot = {
      executorId: route.executorId,
      devices: route.devices,
      startedAt: route.startedAt,
      phase: 'starting',
      url: route.url,
      port: Number(new URL(route.url).port) || undefined,
      health: this.newHealth(),
      totalRestarts: 0,
      removed: new AbortController(),
    };
    this.slots.set(slot.executorId, slot);
    return slot;
  }

  /** true: healthy and kept; false: replaced (restarted, or waiting for its next restart attempt). */
  private async takeOver(slot: Slot, timeoutMs: number): Promise<boolean> {
    const exited = new Promise<false>((resolve) => (slot.onExit = () => resolve(false)));
    const healthy = await Promise.race([
      waitHealthy(slot.url!, this.opts.launch.healthPath ?? '/health', {
        timeoutMs,
        executorId: slot.executorId,
        intervalMs: this.opts.healthIntervalMs ?? 100,
        signal: slot.removed.signal,
      }).then(() => true, () => false),
      exited,
    ]);
    slot.onExit = undefined;
    if (slot.phase !== 'starting') return false; // removed meanwhile
    if (healthy) {
      await this.serve(slot);
      this.log.info({ executor: slot.executorId }, 'executor adopted');
      return true;
    }
    this.log.warn({ executor: slot.executorId, url: slot.url }, 'adopted executor is gone or unhealthy; restarting it');
    await this.opts.platform.stopExecutor(slot.executorId, { graceMs: this.opts.stopGraceMs ?? 5_000 }).catch((err) => this.log.warn({ err }, 'cannot stop it'));
    if (slot.phase !== 'starting') return false;
    slot.phase = 'restarting';
    slot.totalRestarts++;
    slot.health.failed();
    this.setState(slot, 'failed');
    await this.restart(slot);
    return false;
  }

  private newSlot(devices: DeviceRef[]): Slot {
    const executorId = `${this.opts.executorName}-${devices.map((d) => d.globalRank).join('-')}`;
    if (this.slots.has(executorId)) throw new Error(`executor ${executorId} already exists`);
    const slot: Slot = { executorId, devices, startedAt: Date.now(), phase: 'starting', health: this.newHealth(), totalRestarts: 0, removed: new AbortController() };
    this.slots.set(executorId, slot);
    return slot;
  }

  private async start(slot: Slot): Promise<void> {
    await this.launch(slot);
    if (slot.phase !== 'starting') throw new ExecutorRemovedError(slot.executorId);
    await this.serve(slot);
  }

  /** The executor is healthy: route ready, health checks on. */
  private async serve(slot: Slot): Promise<void> {
    slot.phase = 'running';
    slot.health.ready();
    await this.opts.store.setExecutorState(slot.executorId, this.servingState(slot));
    this.watch(slot);
  }

  private newHealth(): ExecutorHealth {
    const { initialMs, maxMs } = this.opts.restartBackoff ?? {};
    const unansweredLimit = this.opts.healthCheck?.unansweredLimit;
    return new ExecutorHealth(
      {
        ...(initialMs !== undefined ? { initialMs } : {}),
        ...(maxMs !== undefined ? { maxMs } : {}),
        ...(this.opts.stableAfterMs !== undefined ? { stableAfterMs: this.opts.stableAfterMs } : {}),
        ...(unansweredLimit !== undefined ? { unansweredLimit } : {}),
      },
      this.opts.now,
    );
  }

  /**
   * Starts the process, writes its route ('starting'), waits for health. On failure the process is stopped
   * and the error says why (exit + last lines, timeout, removed).
   */
  private async launch(slot: Slot): Promise<void> {
    slot.removed.signal.throwIfAborted();
    let exitSeen: ExitEvent | undefined;
    const exited = new Promise<ExitEvent>((resolve) => {
      slot.onExit = (e) => {
        exitSeen = e;
        resolve(e);
      };
    });
    const inst = await this.opts.platform.startExecutor({
      executorId: slot.executorId,
      taskId: this.taskId,
      node: slot.devices[0]!.node,
      devices: slot.devices,
      launch: this.opts.launch,
      ...(this.opts.env ? { env: this.opts.env } : {}),
      ...(slot.port !== undefined ? { port: slot.port } : {}),
    });
    try {
      await this.writeStartingRoute(slot, inst.url);
      const died = exited.then((e) => Promise.reject(new ExecutorStartError(slot.executorId, e)));
      died.catch(() => {});
      const healthTimeoutMs = this.opts.healthTimeoutMs ?? 60_000;
      await Promise.race([
        waitHealthy(inst.url, this.opts.launch.healthPath ?? '/health', {
          timeoutMs: healthTimeoutMs,
          executorId: slot.executorId,
          intervalMs: this.opts.healthIntervalMs ?? 100,
          signal: slot.removed.signal,
        }).catch((e) => {
          if (e instanceof TimeoutError) throw new ExecutorStartTimeoutError(slot.executorId, healthTimeoutMs);
          if (slot.removed.signal.aborted) throw new ExecutorRemovedError(slot.executorId);
          throw e;
        }),
        died,
      ]);
    } catch (e) {
      await this.opts.platform.stopExecutor(slot.executorId, { graceMs: this.opts.stopGraceMs ?? 5_000 });
      if (e instanceof ExecutorStartTimeoutError) {
        const tail = exitSeen?.logTail ?? (await Promise.race([exited, sleep(1_000).then(() => undefined)]))?.logTail;
        throw new ExecutorStartTimeoutError(slot.executorId, e.timeoutMs, tail);
      }
      throw e;
    }
  }

  /** A fresh route, or (restart) the same route with its new URL, keeping its outstanding count. */
  private async writeStartingRoute(slot: Slot, url: string): Promise<void> {
    const { store } = this.opts;
    const previous = await store.getExecutor(slot.executorId);
    slot.url = url;
    slot.port = Number(new URL(url).port) || undefined;
    if (previous && previous.url === url) return store.setExecutorState(slot.executorId, 'starting');
    const route: ExecutorRoute = {
      executorId: slot.executorId,
      taskId: this.taskId,
      url,
      sidecarRanks: slot.devices.map((d) => d.globalRank),
      devices: slot.devices,
      state: 'starting',
      outstanding: previous?.outstanding ?? 0,
      startedAt: slot.startedAt,
    };
    await store.putExecutor(route);
  }

  // ---------- crashes and restarts ----------

  private onPlatformEvent(e: PlatformEvent): void {
    if (e.kind !== 'executor-exited' || e.taskId !== this.taskId) return;
    const slot = this.slots.get(e.executorId);
    if (!slot) return;
    const notify = slot.onExit;
    slot.onExit = undefined;
    notify?.(e);
    if (e.expected || slot.phase !== 'running') return; // starting: launch() reports it; restarting/draining: handled there
    const how = e.signal ? `was killed by ${e.signal}` : `exited with code ${e.code}`;
    this.log.warn({ executor: slot.executorId, code: e.code, signal: e.signal, tail: e.logTail?.slice(-5) }, `executor ${how}`);
    this.scheduleRestart(slot, `the process ${how}`);
  }

  /** Probes a running executor's health every interval until it stops running; an unhealthy one is replaced. */
  private watch(slot: Slot): void {
    const intervalMs = this.opts.healthCheck?.intervalMs ?? 1_000;
    if (intervalMs <= 0 || this.closed) return;
    clearTimeout(slot.probeTimer);
    const url = slot.url!;
    const probe = async () => {
      slot.probeTimer = undefined;
      if (slot.phase !== 'running') return;
      const result = await probeExecutor(url, this.opts.launch.healthPath ?? '/health', this.opts.healthCheck?.timeoutMs ?? 2_000, slot.executorId);
      if (slot.phase !== 'running' || slot.url !== url) return; // died, removed or restarted meanwhile: not this probe's business
      const reason = slot.health.observe(result);
      if (reason) return this.replaceUnhealthy(slot, reason);
      slot.probeTimer = setTimeout(() => void probe(), intervalMs);
    };
    slot.probeTimer = setTimeout(() => void probe(), intervalMs);
  }

  /** Out of the routes at once (route `failed`), then the process is stopped and restarted with backoff. */
  private replaceUnhealthy(slot: Slot, reason: string): void {
    this.log.warn({ executor: slot.executorId, url: slot.url, reason }, 'executor unhealthy: out of the routes; stopping it to restart it');
    slot.phase = 'restarting';
    this.setState(slot, 'failed');
    slot.pending = (async () => {
      await this.opts.platform
        .stopExecutor(slot.executorId, { graceMs: this.opts.stopGraceMs ?? 5_000 })
        .catch((err) => this.log.warn({ err, executor: slot.executorId }, 'cannot stop the unhealthy executor'));
      if (slot.phase !== 'restarting') return; // removed meanwhile: retire() finishes it
      this.scheduleRestart(slot, `unhealthy: ${reason}`);
    })();
  }

  private scheduleRestart(slot: Slot, reason: string): void {
    if (this.closed || slot.phase === 'draining' || slot.phase === 'stopped') return;
    slot.phase = 'restarting';
    clearTimeout(slot.probeTimer);
    const delay = slot.health.failed();
    slot.totalRestarts++;
    this.setState(slot, 'failed');
    this.log.warn({ executor: slot.executorId, reason, delayMs: delay, restart: slot.totalRestarts }, `restarting executor in ${delay} ms (${reason})`);
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      slot.pending = this.restart(slot);
    }, delay);
  }

  private async restart(slot: Slot): Promise<void> {
    if (slot.phase !== 'restarting') return;
    try {
      await this.launch(slot);
    } catch (e) {
      if (slot.phase !== 'restarting' || isError(e) && e.code === 'PLATFORM_SHUT_DOWN') return;
      this.scheduleRestart(slot, `the restart failed: ${(e as Error).message.split('; last output:')[0]}`);
      return;
    }
    if (slot.phase !== 'restarting') return; // removed meanwhile: retire() stops it
    await this.serve(slot).catch((err) => this.log.warn({ err, executor: slot.executorId }, 'cannot mark the route ready'));
    this.log.info({ executor: slot.executorId, restarts: slot.totalRestarts }, 'executor restarted');
  }

  // ---------- removal ----------

  /** Stop routing, wait for in-flight requests (within the grace), stop the process, delete the route. */
  private async retire(slot: Slot, options: { drain: boolean; graceMs?: number | undefined }): Promise<void> {
    if (slot.phase === 'draining' || slot.phase === 'stopped') return slot.pending;
    const wasServing = slot.phase === 'running';
    slot.phase = 'draining';
    clearTimeout(slot.restartTimer);
    clearTimeout(slot.probeTimer);
    const inProgress = slot.pending; // a start or restart
    const done = (async () => {
      if (options.drain && wasServing) {
        await this.opts.store.setExecutorState(slot.executorId, 'draining').catch((err) => this.log.warn({ err }, 'cannot mark draining'));
        await this.waitIdle(slot, options.graceMs ?? this.opts.drainGraceMs ?? 30_000);
      }
      slot.removed.abort(new ExecutorRemovedError(slot.executorId));
      await inProgress?.catch(() => {});
      await this.opts.platform.stopExecutor(slot.executorId, { graceMs: this.opts.stopGraceMs ?? 5_000 });
      await this.opts.store.deleteExecutor(slot.executorId).catch((err) => this.log.warn({ err }, 'cannot delete route'));
      slot.phase = 'stopped';
      this.slots.delete(slot.executorId);
    })();
    slot.pending = done;
    return done;
  }

  /**
   * Waits until the route's outstanding count is 0 on two polls in a row (a dispatcher may have picked the
   * route just before it turned draining and not yet counted its request), or the grace passes.
   */
  private async waitIdle(slot: Slot, graceMs: number): Promise<void> {
    const poll = this.opts.drainPollMs ?? 50;
    const end = Date.now() + graceMs;
    let idlePolls = 0;
    let last = 0;
    await sleep(Math.min(poll, graceMs));
    while (Date.now() < end) {
      const route = await this.opts.store.getExecutor(slot.executorId).catch(() => null);
      if (route !== null) {
        last = route?.outstanding ?? 0;
        idlePolls = last <= 0 ? idlePolls + 1 : 0;
        if (idlePolls >= 2) return;
      }
      await sleep(poll);
    }
    this.log.warn({ executor: slot.executorId, outstanding: last, graceMs }, 'drain grace passed with requests in flight; stopping anyway');
  }

  private setState(slot: Slot, state: ExecutorState): void {
    this.opts.store.setExecutorState(slot.executorId, state).catch((err) => this.log.warn({ err, executor: slot.executorId, state }, 'cannot update route'));
  }

  private ordered(): Slot[] {
    return [...this.slots.values()]
      .filter((s) => s.phase !== 'stopped' && s.phase !== 'draining')
      .sort((a, b) => a.startedAt - b.startedAt || (a.executorId < b.executorId ? -1 : 1));
  }
}
