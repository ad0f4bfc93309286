/**
 * A long-lived helper process kept running the way the task manager keeps an executor running (the same probe,
 * control/taskmanager/health.ts, and the same rules, health-policy.ts): once started it is probed every interval;
 * when it dies or is judged unhealthy its death is logged, listeners hear `down`, what the dead process left is
 * cleaned (`cleanup`), and it is started again after the policy's backoff (again and again while starts fail);
 * once a start is ready listeners hear `up`. `stop()` ends it for good.
 *
 *   const p = new Supervised({ name: 'sidecar-n0', start: async () => ({ child, healthUrl }), cleanup: (pid) => ... });
 *   await p.start();            // the first start: its failure is the caller's (nothing is retried)
 *   p.onChange((state, reason) => ...);
 *   await p.stop();
 */
import type { Logger } from '../../lib/log.js';
import { probeExecutor } from '../taskmanager/health.js';
import { ExecutorHealth, type HealthPolicyOptions } from '../taskmanager/health-policy.js';
import type { ExitInfo, ManagedChild } from './child.js';

export type SupervisedState = 'starting' | 'up' | 'down' | 'stopped';

/** One running incarnation: the process, and where its health answers (GET healthUrl). */
export interface Incarnation {
  child: ManagedChild;
  healthUrl: string;
}

export interface SupervisedOptions {
  name: string;
  /** Spawns one incarnation and resolves once it is ready (rejects when it is not; the process is then gone). */
  start(): Promise<Incarnation>;
  /** Removes what a dead incarnation left behind (called with its pid before each restart, and at stop for every pid). */
  cleanup?(pid: number): void | Promise<void>;
  /** @default '/health' */
  healthPath?: string;
  /** A probe every `intervalMs` bounded by `timeoutMs`. @default {intervalMs: 1000, timeoutMs: 2000} (unansweredLimit: the policy's) */
  healthCheck?: { intervalMs?: number; timeoutMs?: number; unansweredLimit?: number };
  /** Restart backoff and its reset (the policy's defaults). */
  restartBackoff?: { initialMs?: number; maxMs?: number };
  stableAfterMs?: number;
  /** SIGTERM -> SIGKILL grace at stop and when replacing an unhealthy process. @default 5000 */
  stopGraceMs?: number;
  now?: () => number;
  log: Logger;
}

export class Supervised {
  private current: Incarnation | undefined;
  private stateNow: SupervisedState = 'starting';
  private readonly health: ExecutorHealth;
  private readonly listeners = new Set<(state: 'up' | 'down', reason: string) => void>();
  private readonly pidsSeen = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private restarts = 0;
  private restarting: Promise<void> | undefined;

  constructor(private readonly opts: SupervisedOptions) {
    const { initialMs, maxMs } = opts.restartBackoff ?? {};
    const policy: HealthPolicyOptions = {
      ...(initialMs !== undefined ? { initialMs } : {}),
      ...(maxMs !== undefined ? { maxMs } : {}),
      ...(opts.stableAfterMs !== undefined ? { stableAfterMs: opts.stableAfterMs } : {}),
      ...(opts.healthCheck?.unansweredLimit !== undefined ? { unansweredLimit: opts.healthCheck.unansweredLimit } : {}),
    };
    this.health = new ExecutorHealth(policy, opts.now);
  }

  get state(): SupervisedState {
    return this.stateNow;
  }

  /** The running process's pid (undefined while down). */
  get pid(): number | undefined {
    return this.stateNow === 'up' ? this.current?.child.pid : undefined;
  }

  /** Restarts so far. */
  get restartCount(): number {
    return this.restarts;
  }

  /** Told on every transition to up (after a restart) or down (a death or an unhealthy verdict). Returns the unsubscribe. */
  onChange(listener: (state: 'up' | 'down', reason: string) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The first start; rejects with the start's error (nothing retried). */
  async start(): Promise<void> {
    this.adopt(await this.opts.start());
  }

  /** Stops the process for good (no restart), then cleans up after every incarnation. Idempotent. */
  async stop(): Promise<void> {
    if (this.stateNow === 'stopped') return;
    this.stateNow = 'stopped';
    clearTimeout(this.timer);
    await this.restarting?.catch(() => {});
    await this.current?.child.stop(this.opts.stopGraceMs ?? 5_000);
    for (const pid of this.pidsSeen) await this.cleanup(pid);
  }

  /** SIGKILL now, synchronously (a process 'exit' hook); no restart follows. */
  kill(): void {
    this.stateNow = 'stopped';
    clearTimeout(this.timer);
    this.current?.child.kill();
  }

  private adopt(inc: Incarnation): void {
    this.current = inc;
    this.pidsSeen.add(inc.child.pid);
    this.health.ready();
    const wasDown = this.stateNow === 'down';
    this.stateNow = 'up';
    if (wasDown) {
      this.opts.log.info({ process: this.opts.name, pid: inc.child.pid, restarts: this.restarts }, `${this.opts.name} restarted`);
      this.emit('up', `restarted (pid ${inc.child.pid})`);
    }
    void inc.child.exited.then((exit) => this.onExit(inc, exit));
    this.schedule(inc);
  }

  private onExit(inc: Incarnation, exit: ExitInfo): void {
    if (this.current !== inc || this.stateNow !== 'up' || exit.expected) return;
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    this.opts.log.error({ process: this.opts.name, pid: inc.child.pid, code: exit.code, signal: exit.signal, tail: exit.logTail.slice(-5) }, `${this.opts.name} ${how}`);
    this.down(`the process ${how}`);
  }

  private schedule(inc: Incarnation): void {
    const intervalMs = this.opts.healthCheck?.intervalMs ?? 1_000;
    if (intervalMs <= 0) return;
    this.timer = setTimeout(() => void this.probe(inc), intervalMs);
    this.timer.unref();
  }

  private async probe(inc: Incarnation): Promise<void> {
    const result = await probeExecutor(inc.healthUrl, this.opts.healthPath ?? '/health', this.opts.healthCheck?.timeoutMs ?? 2_000);
    if (this.current !== inc || this.stateNow !== 'up') return;
    const reason = this.health.observe(result);
    if (!reason) return this.schedule(inc);
    this.opts.log.error({ process: this.opts.name, pid: inc.child.pid, reason }, `${this.opts.name} is unhealthy; replacing it`);
    this.down(`unhealthy: ${reason}`);
  }

  /** Out of service: listeners told, the process ended (if it lingers), its leftovers cleaned, a restart scheduled. */
  private down(reason: string): void {
    const dead = this.current!;
    this.stateNow = 'down';
    clearTimeout(this.timer);
    this.emit('down', reason);
    this.restarting = (async () => {
      await dead.child.stop(this.opts.stopGraceMs ?? 5_000);
      await this.cleanup(dead.child.pid);
      this.retry();
    })();
  }

  private retry(): void {
    if (this.stateNow !== 'down') return;
    const delay = this.health.failed();
    this.restarts++;
    this.opts.log.warn({ process: this.opts.name, delayMs: delay, restart: this.restarts }, `restarting ${this.opts.name} in ${delay} ms`);
    this.timer = setTimeout(() => {
      this.restarting = this.opts.start().then(
        (inc) => {
          if (this.stateNow === 'stopped') return void inc.child.stop(this.opts.stopGraceMs ?? 5_000).then(() => this.cleanup(inc.child.pid));
          this.adopt(inc);
        },
        (err: Error) => {
          this.opts.log.error({ process: this.opts.name, err: err.message }, `restarting ${this.opts.name} failed`);
          this.retry();
        },
      );
    }, delay);
  }

  private async cleanup(pid: number): Promise<void> {
    try {
      await this.opts.cleanup?.(pid);
    } catch (err) {
      this.opts.log.warn({ process: this.opts.name, pid, err: (err as Error).message }, 'cleaning up after the process failed');
    }
  }

  private emit(state: 'up' | 'down', reason: string): void {
    for (const l of this.listeners) {
      try {
        l(state, reason);
      } catch (err) {
        this.opts.log.error({ err }, 'supervision listener threw');
      }
    }
  }
}
