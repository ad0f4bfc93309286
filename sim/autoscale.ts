/**
 * The "autoscaler" deployment mode: the live Autoscaler and planPool (imported from policies/, never copied)
 * decide in virtual time. Every tick (default 2 s of simulated time) the load signals are computed from the
 * simulated dispatcher — invocations that arrived per task and app requests over the tick, in-flight invocations
 * per task — and fed to observe(); decide() and the device pool then give each task's executor count. A scale-up
 * takes its devices at once and serves after the cold-start delay; a scale-down stops routing to the executors
 * with the fewest outstanding invocations and frees their devices once they have drained.
 */
import { allocate, freeDevices, type Inventory } from '../policies/allocation.js';
import { Autoscaler, type AutoscalerOptions } from '../policies/autoscaler.js';
import { estimateCapacity } from '../policies/capacity.js';
import { planPool } from '../policies/pool.js';
import type { DeviceRef } from '../lib/store.js';
import type { AutoscalePolicy, TaskCapacity, TaskProfile } from '../lib/autoscale.js';
import type { EventQueue } from './engine/queue.js';
import type { SimTask } from './apps/record.js';
import type { SimExecutor } from './executors/types.js';

export interface AutoscaleSettings {
  tickMs: number;
  coldStartMs: number;
  /** Policy per task label; labels not named get `policy`. */
  policy: AutoscalePolicy;
  policies: Record<string, AutoscalePolicy>;
  options: Partial<AutoscalerOptions>;
  /**
   * Profiles per task label (sim/profile.ts, or `cornserve profile`'s): the capacity per executor comes from them as
   * on the live platform (the live CapacitySource's figure, `estimateCapacity`, read at each task's policy; no live
   * service stats here). Labels without one get the autoscaler's Little's-law default.
   */
  profiles?: Record<string, TaskProfile>;
}

export interface ScaleEvent {
  atMs: number;
  label: string;
  from: number;
  to: number;
  reason: string;
}

export interface Pool {
  inventory: Inventory;
  devices: number;
  /** The devices each live executor holds (freed when it has drained). */
  held: Map<SimExecutor, DeviceRef[]>;
}

export class SimAutoscaling {
  readonly autoscaler: Autoscaler;
  readonly decisions: ScaleEvent[] = [];
  private readonly arrivals = new Map<string, number>();
  private requests = 0;
  /** Executors cold-starting per task, and how many of them a later scale-down cancelled. */
  private readonly starting = new Map<string, number>();
  private readonly cancelled = new Map<string, number>();
  private readonly draining: Array<{ ex: SimExecutor; taskId: string }> = [];
  private readonly made = new Map<string, number>();

  constructor(
    private readonly events: EventQueue,
    private readonly tasks: SimTask[],
    /** The routable executors per task (mutated: scale-ups join, scale-downs leave). */
    private readonly executors: Map<string, SimExecutor[]>,
    private readonly pool: Pool,
    private readonly make: (t: SimTask, id: string, node: number) => SimExecutor,
    private readonly s: AutoscaleSettings,
    private readonly app: { appId: string; invocationsPerRequest: Record<string, number> },
    /** Every executor that ever served (for the invariant checks). */
    private readonly everyExecutor: SimExecutor[],
  ) {
    const labelOf = new Map(tasks.map((t) => [t.taskId, t.label]));
    const capacity = (taskId: string): TaskCapacity | undefined => {
      const label = labelOf.get(taskId);
      const profile = label === undefined ? undefined : s.profiles?.[label];
      return profile ? estimateCapacity({ taskId, profile, live: [], policy: this.policyOf(label!), now: this.events.now }) : undefined;
    };
    this.autoscaler = new Autoscaler(s.options, capacity);
    for (const t of tasks) this.made.set(t.taskId, executors.get(t.taskId)!.length);
  }

  policyOf(label: string): AutoscalePolicy {
    return this.s.policies[label] ?? this.s.policy;
  }

  /** The dispatcher routed an invocation of this task. */
  invoked(taskId: string): void {
    this.arrivals.set(taskId, (this.arrivals.get(taskId) ?? 0) + 1);
  }

  requestArrived(): void {
    this.requests++;
  }

  /** Ticks every tickMs while `active()` says the run still has work. */
  start(active: () => boolean): void {
    const loop = () => {
      this.tick();
      if (active()) this.events.after(this.s.tickMs, loop);
    };
    this.events.after(this.s.tickMs, loop);
  }

  tick(): void {
    const now = this.events.now;
    const perS = 1000 / this.s.tickMs;
    this.freeDrained();
    this.autoscaler.observe(
      this.tasks.map((t) => {
        // In flight = what the task's executors hold (queued or running), as their GET /load reports it: not the
        // invocations leased to them that still wait for their producers (a generator's, for the whole LLM call
        // before it), which more executors of this task would not serve sooner. It is the executors' own figure too.
        const holding = this.executors.get(t.taskId)!.reduce((a, ex) => a + ex.holding, 0) + this.draining.filter((d) => d.taskId === t.taskId).reduce((a, d) => a + d.ex.holding, 0);
        return { taskId: t.taskId, at: now, windowMs: this.s.tickMs, arrivalRps: (this.arrivals.get(t.taskId) ?? 0) * perS, inFlight: holding, executorInFlight: holding, executorsServing: this.executors.get(t.taskId)!.length, held: 0 };
      }),
      [{ appId: this.app.appId, at: now, windowMs: this.s.tickMs, requestRps: this.requests * perS, invocationsPerRequest: this.app.invocationsPerRequest }],
    );
    this.arrivals.clear();
    this.requests = 0;
    const count = (t: SimTask) => this.executors.get(t.taskId)!.length + (this.starting.get(t.taskId) ?? 0) - (this.cancelled.get(t.taskId) ?? 0);
    const wants = this.autoscaler.decide(now, this.tasks.map((t) => ({ taskId: t.taskId, policy: this.policyOf(t.label), executors: count(t) })));
    const grants = planPool(
      this.tasks.map((t, i) => ({ taskId: t.taskId, current: count(t), want: wants[i]!.to, min: this.policyOf(t.label).min, devicesPerExecutor: t.devicesPerExecutor, demandRps: wants[i]!.currentDemandRps, ...(wants[i]!.capacity ? { perExecutorRps: wants[i]!.capacity!.perExecutorRps } : {}) })),
      this.pool.devices,
    );
    // Scale-downs first, so the devices they free can go to the scale-ups once drained.
    const order = this.tasks.map((t, i) => ({ t, i, delta: grants[i]!.to - count(t) })).sort((a, b) => a.delta - b.delta);
    for (const { t, i, delta } of order) {
      if (delta === 0) continue;
      const from = count(t);
      const to = delta < 0 ? this.scaleDown(t, -delta) : this.scaleUp(t, delta);
      if (to !== from) this.decisions.push({ atMs: now, label: t.label, from, to, reason: grants[i]!.reason ?? wants[i]!.reason });
    }
  }

  private scaleUp(t: SimTask, n: number): number {
    for (let k = 0; k < n; k++) {
      const cancelled = this.cancelled.get(t.taskId) ?? 0;
      if (cancelled > 0) { this.cancelled.set(t.taskId, cancelled - 1); continue; } // a cold start still under way is kept
      let devices: DeviceRef[];
      try {
        const a = allocate(this.pool.inventory, t.devicesPerExecutor, t.taskId);
        this.pool.inventory = a.inventory;
        devices = a.devices;
      } catch {
        break; // devices still held by draining executors: the next tick tries again
      }
      const i = this.made.get(t.taskId)!;
      this.made.set(t.taskId, i + 1);
      this.starting.set(t.taskId, (this.starting.get(t.taskId) ?? 0) + 1);
      this.events.after(this.s.coldStartMs, () => {
        this.starting.set(t.taskId, this.starting.get(t.taskId)! - 1);
        const ex = this.make(t, `${t.label}#${i}`, Number(devices[0]!.node.slice('node-'.length)));
        this.pool.held.set(ex, devices);
        const c = this.cancelled.get(t.taskId) ?? 0;
        if (c > 0) {
          this.cancelled.set(t.taskId, c - 1);
          this.draining.push({ ex, taskId: t.taskId });
          return;
        }
        this.everyExecutor.push(ex);
        this.executors.get(t.taskId)!.push(ex);
      });
    }
    return this.executors.get(t.taskId)!.length + (this.starting.get(t.taskId) ?? 0) - (this.cancelled.get(t.taskId) ?? 0);
  }

  private scaleDown(t: SimTask, n: number): number {
    const list = this.executors.get(t.taskId)!;
    for (let k = 0; k < n; k++) {
      const pending = (this.starting.get(t.taskId) ?? 0) - (this.cancelled.get(t.taskId) ?? 0);
      if (pending > 0) { this.cancelled.set(t.taskId, (this.cancelled.get(t.taskId) ?? 0) + 1); continue; }
      if (list.length <= 1) break; // the dispatcher always keeps one executor to route to
      let idle = 0;
      for (let j = 1; j < list.length; j++) if (list[j]!.outstanding < list[idle]!.outstanding) idle = j;
      this.draining.push({ ex: list.splice(idle, 1)[0]!, taskId: t.taskId });
    }
    this.freeDrained();
    return list.length + (this.starting.get(t.taskId) ?? 0) - (this.cancelled.get(t.taskId) ?? 0);
  }

  private freeDrained(): void {
    for (let j = this.draining.length - 1; j >= 0; j--) {
      const { ex, taskId } = this.draining[j]!;
      if (ex.outstanding > 0) continue;
      this.pool.inventory = freeDevices(this.pool.inventory, this.pool.held.get(ex)!, taskId);
      this.pool.held.delete(ex);
      this.draining.splice(j, 1);
    }
  }
}
