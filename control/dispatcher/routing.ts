/**
 * Routing: one executor per invocation, from the routes the task managers keep in the Store.
 * Among a task's `ready` executors the one with the fewest outstanding requests wins; ties rotate
 * (round robin per task). The pick is leased: outstanding +1 now, -1 when the lease is released
 * (after the executor's reply, or its stream, is finished; also on error). Release is idempotent.
 *
 * Caches (per Router): task ids per UnitTask instance (TaskGraph.fromJSON shares instances for equal task JSON),
 * and — for the in-process MemoryStore, whose change notifications arrive a microtask later — each task's
 * record and executor routes, dropped on every `task` / `route` change notification of that task (a read during
 * which any such notification arrived is not kept: it may predate the change). Outstanding
 * counts in the cached routes follow this router's own leases (adjustOutstanding returns the count); with one
 * MemoryStore there is no other writer. A Redis store is read on every graph (other replicas lease too). Over the
 * store link (`cacheRoutes: 'one-ready'`) other processes lease too, so only a task with ONE ready executor is
 * cached: there is no choice to make, so its count cannot be stale in a way that matters; with two or more, the
 * counts are read fresh on every graph.
 * Leases over the store link (`leases: 'reported'`): a lease on a task's one cached route is counted here and
 * reported to the Store without waiting (StoreLink.reportOutstanding, sent within a few ms); every release is
 * reported likewise. So a graph over cached routes makes no store round trip at all, while the Store's counts stay
 * this process's true counts, a few ms late (the autoscaler and the other processes' routers read them). Where there
 * is a choice (two or more ready executors, read fresh) the +1 is still awaited: its count steers the next pick.
 * With any store, what a task with no ready executor's autoscaling policy says (may it scale from zero; has it one at all) is kept per task,
 * dropped on each `autoscale` change notification of it (and read again after MIN_ZERO_MAX_AGE_MS regardless).
 */
import type { CutSignal, TaskGraph, UnitTask } from '../../functions/sdk/index.js';
import { StoreNotFoundError, taskIdOf, type ExecutorRoute, type UnitTaskRecord } from '../store/index.js';
import { MemoryStore } from '../store/memory.js';
import type { DispatchStore, ReportsOutstanding } from '../store/link-protocol.js';
import { logger } from '../../lib/log.js';
import { pickLeastOutstanding } from '../../policies/pick.js';
import { COUNTER_TTL_MS, counterNames } from '../autoscaler/signals.js';
import { DispatcherError, HoldQueueFullError, NoExecutorError, StoreUnavailableError, TaskNotDeployedError, TaskNotReadyError } from '../../lib/dispatch-errors.js';

const log = logger('dispatcher');

export interface Lease {
  readonly invocation: number;
  readonly taskId: string;
  readonly route: ExecutorRoute;
  /** outstanding -1 on the executor; safe to call more than once. */
  release(): Promise<void>;
}

/** Store failures become 503s; the dispatcher's own errors pass through. */
async function fromStore<T>(what: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof DispatcherError || e instanceof StoreNotFoundError) throw e;
    throw new StoreUnavailableError(what, e);
  }
}

export interface RouterOptions {
  /**
   * Keep task records and routes between graphs, invalidated by Store change notifications: true = always (this
   * router is the only leaser), 'one-ready' = only while the task has one ready executor (others lease too).
   * @default store is a MemoryStore
   */
  cacheRoutes?: boolean | 'one-ready';
  /**
   * 'reported': leases on a cached route, and every release, are sent to the Store without waiting for its reply
   * (the store must implement ReportsOutstanding: the store link). @default 'awaited'
   */
  leases?: 'awaited' | 'reported';
  /** Invocations one dispatcher holds per task while it starts from zero; more get 503 HOLD_QUEUE_FULL. @default 256 */
  holdCap?: number;
}

/** How a graph's routing may wait: until the abort (the graph's deadline or its caller) for an executor from zero. */
export interface RouteOptions {
  signal?: CutSignal;
  /** Executors not to lease (ones that just refused a connection, before their task manager has seen them go). */
  exclude?: ReadonlySet<string>;
}

/** How often a held invocation looks for a ready executor besides the route change notifications. */
const HOLD_POLL_MS = 250;
/** A cached "may scale from zero" answer is read again after this long even without a notification (a lost pub/sub message). */
const MIN_ZERO_MAX_AGE_MS = 10_000;

const taskIds = new WeakMap<UnitTask, string>();

/** taskIdOf, once per task instance. */
export function taskIdOfCached(task: UnitTask): string {
  let id = taskIds.get(task);
  if (id === undefined) taskIds.set(task, (id = taskIdOf(task)));
  return id;
}

export class Router {
  /** taskId -> rotation counter for ties */
  private readonly turn = new Map<string, number>();
  /** taskId -> its record and routes (only with cacheRoutes) */
  private readonly cached: Map<string, { record: UnitTaskRecord | undefined; routes: ExecutorRoute[] }> | undefined;
  /** Counts task/route change notifications: a read that saw one arrive is not cached (it may predate the change). */
  private changes = 0;
  /** taskId -> invocations this router holds for it (scale from zero) */
  private readonly held = new Map<string, number>();
  private readonly holdCap: number;
  /** Cache only tasks with one ready executor (cacheRoutes 'one-ready'). */
  private readonly cacheOneReadyOnly: boolean;
  /** taskId -> callbacks of held invocations, run on each of its route changes */
  private readonly routeWaiters = new Map<string, Set<() => void>>();
  private watchingRoutes = false;
  /** taskId -> autoscaleOf's answer (from zero? any policy?), read at `at`; dropped on each `autoscale` change of the task */
  private readonly autoscaleCache = new Map<string, AutoscaleAnswer>();
  /** Counts `autoscale` notifications (a read that saw one arrive is not kept); undefined until subscribed. */
  private autoscaleChanges: number | undefined;
  private autoscaleWatchReady = false;
  /** The store, when leases are reported rather than awaited (leases: 'reported'). */
  private readonly reporter: ReportsOutstanding | undefined;

  constructor(
    private readonly store: DispatchStore,
    options: RouterOptions = {},
  ) {
    this.holdCap = options.holdCap ?? 256;
    if (options.leases === 'reported') {
      if (typeof (store as Partial<ReportsOutstanding>).reportOutstanding !== 'function') throw new TypeError("leases: 'reported' needs a store that takes reported lease changes (the store link)");
      this.reporter = store as DispatchStore & ReportsOutstanding;
    }
    this.cacheOneReadyOnly = options.cacheRoutes === 'one-ready';
    if (!(options.cacheRoutes ?? store instanceof MemoryStore)) return;
    const cached = (this.cached = new Map());
    store.subscribe((change) => {
      if (change.kind === 'task') cached.delete(change.id);
      else if (change.kind === 'route') cached.delete(change.taskId);
      else return;
      this.changes++;
    });
  }

  /** The task's record and executor routes read from the Store, and cached when they may be (routeTask looks in the cache first). */
  private async readStore(taskId: string): Promise<{ record: UnitTaskRecord | undefined; routes: ExecutorRoute[] }> {
    const changesBefore = this.changes;
    const record = await fromStore(`read unit task ${taskId}`, this.store.getTask(taskId));
    const routes = record && record.state === 'ready' ? await fromStore(`list executors of ${taskId}`, this.store.listExecutors(taskId)) : [];
    const entry = { record, routes };
    // Kept only for a ready task with ready executors: anything else is an error path, read fresh every time.
    const ready = routes.reduce((n, r) => n + (r.state === 'ready' ? 1 : 0), 0);
    if (this.cached && this.changes === changesBefore && record?.state === 'ready' && ready > 0 && (ready === 1 || !this.cacheOneReadyOnly)) this.cached.set(taskId, entry);
    return entry;
  }

  /**
   * Leases an executor for every invocation of `graph`. All or nothing: when one invocation cannot be
   * routed, the leases already taken are released and the error is thrown.
   */
  routeGraph(graph: TaskGraph, options: RouteOptions = {}): Promise<Lease[]> {
    const byTask = new Map<string, number[]>();
    graph.invocations.forEach((inv, i) => {
      const id = taskIdOfCached(inv.task);
      byTask.set(id, [...(byTask.get(id) ?? []), i]);
    });
    if (byTask.size === 1) {
      // One task (the common graph): its leases are already in invocation order, and all or nothing is routeTask's own.
      const [taskId, invocations] = byTask.entries().next().value!;
      return this.routeTask(taskId, graph.invocations[0]!.task, invocations, options);
    }
    return this.routeTasks(graph, byTask, options);
  }

  /** routeGraph for a graph of several tasks: each routed at once; all or nothing. */
  private async routeTasks(graph: TaskGraph, byTask: Map<string, number[]>, options: RouteOptions): Promise<Lease[]> {
    const leases: Lease[] = [];
    const results = await Promise.allSettled(
      [...byTask].map(async ([taskId, invocations]) => {
        for (const lease of await this.routeTask(taskId, graph.invocations[invocations[0]!]!.task, invocations, options)) leases.push(lease);
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(leases.map((l) => l.release()));
      throw failed.reason;
    }
    return leases.sort((a, b) => a.invocation - b.invocation);
  }

  /** Leases one executor per invocation of one task, spreading them by outstanding count. */
  private async routeTask(taskId: string, task: UnitTask, invocations: number[], options: RouteOptions): Promise<Lease[]> {
    const cached = this.cached?.get(taskId); // a hit needs no await
    let hit = cached !== undefined;
    let { record, routes } = cached ?? (await this.readStore(taskId));
    if (!record) throw new TaskNotDeployedError(taskId, task.name);
    if (record.state !== 'ready') throw new TaskNotReadyError(taskId, task.name, record.state);
    let ready = routes.filter((r) => r.state === 'ready' && !options.exclude?.has(r.executorId));
    // Read only when no executor is ready: whether one may start from zero, and (for the error) whether any will.
    const autoscale = ready.length === 0 ? await this.autoscaleOf(taskId) : undefined;
    if (autoscale?.fromZero) {
      routes = await this.hold(taskId, task, invocations.length, options.signal);
      ready = routes.filter((r) => r.state === 'ready' && !options.exclude?.has(r.executorId));
      hit = false;
    }
    // A cached route stands for the executor as of its last change notification: leased without a round trip.
    if (hit && this.reporter) return invocations.map((invocation) => this.reportedLease(invocation, taskId, this.pick(taskId, ready)!));
    const leases: Lease[] = [];
    try {
      for (const invocation of invocations) {
        for (;;) {
          const route = this.pick(taskId, ready);
          if (!route) throw new NoExecutorError(taskId, task.name, routes.length, routes.length === 0 && autoscale?.policy === false);
          try {
            this.noteOutstanding(taskId, route, await fromStore(`lease executor ${route.executorId}`, this.store.adjustOutstanding(route.executorId, +1)));
          } catch (e) {
            if (!(e instanceof StoreNotFoundError)) throw e;
            this.cached?.delete(taskId);
            ready.splice(ready.indexOf(route), 1); // removed since we listed it: try the next one
            continue;
          }
          leases.push(this.lease(invocation, taskId, route));
          break;
        }
      }
    } catch (e) {
      await Promise.all(leases.map((l) => l.release()));
      throw e;
    }
    return leases;
  }

  /**
   * What routing needs of a task's autoscaling policy when none of its executors is ready: `fromZero`, its minimum is 0
   * (its invocations wait for an executor instead of a 503); `policy`, it has one at all (without one — scaled to 0 by
   * hand, or autoscaling off — no executor starts by itself, and NO_EXECUTOR says how to bring one back).
   */
  private async autoscaleOf(taskId: string): Promise<AutoscaleAnswer> {
    const hit = this.autoscaleCache.get(taskId);
    if (hit && Date.now() - hit.at < MIN_ZERO_MAX_AGE_MS) return hit;
    const before = this.watchAutoscale();
    const record = await fromStore(`read the autoscaling policy of ${taskId}`, this.store.getAutoscale(taskId));
    const answer = { fromZero: record?.policy?.min === 0, policy: record?.policy !== undefined, at: Date.now() };
    // Kept only when the change notifications are live and none arrived during the read (it may predate it).
    if (this.autoscaleWatchReady && this.autoscaleChanges === before) this.autoscaleCache.set(taskId, answer);
    return answer;
  }

  /** Subscribes (once) to `autoscale` changes, which drop the task's cached answer; returns the change count now. */
  private watchAutoscale(): number {
    if (this.autoscaleChanges === undefined) {
      this.autoscaleChanges = 0;
      this.store.subscribe((change) => {
        if (change.kind !== 'autoscale') return;
        this.autoscaleCache.delete(change.id);
        this.autoscaleChanges!++;
      });
      this.store.subscriptionReady().then(
        () => (this.autoscaleWatchReady = true),
        () => {}, // no live notifications: never cache
      );
    }
    return this.autoscaleChanges;
  }

  /**
   * Holds `count` invocations until the task has a ready executor: counts them in the Store (`held:<taskId>`, the
   * autoscaler's signal), asks for an executor at once (Store.wakeTask), and waits for a route change (or polls),
   * bounded by `signal` (the graph's deadline). Past the per-task cap: 503 HOLD_QUEUE_FULL at once.
   */
  private async hold(taskId: string, task: UnitTask, count: number, signal: CutSignal | undefined): Promise<ExecutorRoute[]> {
    const held = this.held.get(taskId) ?? 0;
    if (held + count > this.holdCap) throw new HoldQueueFullError(taskId, task.name, this.holdCap);
    this.held.set(taskId, held + count);
    const counter = (delta: number) =>
      this.store.addCounters([{ name: counterNames.held(taskId), delta }], COUNTER_TTL_MS).catch((err: unknown) => log.warn({ err, task: taskId }, 'could not count held invocations'));
    await counter(count);
    await this.store.wakeTask(taskId).catch((err: unknown) => log.warn({ err, task: taskId }, 'could not ask for an executor'));
    log.info({ task: taskId, held: held + count }, 'holding invocations until an executor is ready (scale from zero)');
    this.watchRoutes();
    let wake: () => void = () => {};
    const waiters = this.routeWaiters.get(taskId) ?? new Set();
    this.routeWaiters.set(taskId, waiters);
    const onRoute = () => wake();
    waiters.add(onRoute);
    try {
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        this.cached?.delete(taskId);
        const routes = await fromStore(`list executors of ${taskId}`, this.store.listExecutors(taskId));
        if (routes.some((r) => r.state === 'ready')) return routes;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => done(), HOLD_POLL_MS);
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            resolve();
          };
          wake = done;
          signal?.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      waiters.delete(onRoute);
      if (waiters.size === 0) this.routeWaiters.delete(taskId);
      this.held.set(taskId, (this.held.get(taskId) ?? count) - count);
      await counter(-count);
    }
  }

  private watchRoutes(): void {
    if (this.watchingRoutes) return;
    this.watchingRoutes = true;
    this.store.subscribe((change) => {
      if (change.kind !== 'route') return;
      for (const w of this.routeWaiters.get(change.taskId) ?? []) w();
    });
  }

  private pick(taskId: string, ready: ExecutorRoute[]): ExecutorRoute | undefined {
    if (ready.length === 0) return undefined;
    const turn = this.turn.get(taskId) ?? 0;
    this.turn.set(taskId, turn + 1);
    return pickLeastOutstanding(ready, turn);
  }

  /**
   * A released lease's count goes to the route it leased AND to the route now cached for that executor: the cache
   * may have been re-read since the lease was taken (any route change of the task drops it), and the new copy holds
   * the count as it was at that read. Left there, an executor whose leases all ended after a re-read would keep its
   * old count in this router and get nothing more — a backlog stuck on the others while it idles.
   */
  private noteOutstanding(taskId: string, leased: ExecutorRoute, n: number): void {
    leased.outstanding = n;
    const current = this.cached?.get(taskId)?.routes.find((r) => r.executorId === leased.executorId);
    if (current) current.outstanding = n;
  }

  /** Adds `delta` to this router's copy of the executor's count: the leased route and the one cached now, if another. */
  private bump(taskId: string, leased: ExecutorRoute, delta: number): void {
    leased.outstanding += delta;
    const current = this.cached?.get(taskId)?.routes.find((r) => r.executorId === leased.executorId);
    if (current && current !== leased) current.outstanding += delta;
  }

  /** A lease counted here at once and reported to the Store (leases: 'reported'); the Store's reply corrects the count. */
  private reportedLease(invocation: number, taskId: string, route: ExecutorRoute): Lease {
    this.bump(taskId, route, +1);
    this.reporter!.reportOutstanding(route.executorId, +1, (n) => this.noteOutstanding(taskId, route, n));
    return this.lease(invocation, taskId, route);
  }

  private lease(invocation: number, taskId: string, route: ExecutorRoute): Lease {
    let released: Promise<void> | undefined;
    const router = this;
    return {
      invocation,
      taskId,
      route: { ...route },
      // A method, not an arrow property: no name defined on a closure per lease (see lib/wait.ts SteppedTimer).
      release() {
        return (released ??= router.release(taskId, route));
      },
    };
  }

  /** Gives a lease's count back: reported (leases: 'reported'), or awaited from the Store. */
  private release(taskId: string, route: ExecutorRoute): Promise<void> {
    if (this.reporter) {
      this.bump(taskId, route, -1);
      this.reporter.reportOutstanding(route.executorId, -1, (n) => this.noteOutstanding(taskId, route, n));
      return Promise.resolve();
    }
    return this.store.adjustOutstanding(route.executorId, -1).then(
      (n) => this.noteOutstanding(taskId, route, n),
      (err: unknown) => {
        // A deleted executor has nothing to decrement; anything else is worth a line in the log.
        if (!(err instanceof StoreNotFoundError)) log.warn({ err, executor: route.executorId }, 'could not release executor lease');
      },
    );
  }
}

/** autoscaleOf's answer, with when it was read. */
interface AutoscaleAnswer {
  fromZero: boolean;
  policy: boolean;
  at: number;
}

const routers = new WeakMap<DispatchStore, Router>();

/** One Router per Store, so round-robin state is shared by every dispatch in the process. */
export function routerFor(store: DispatchStore): Router {
  let r = routers.get(store);
  if (!r) routers.set(store, (r = new Router(store)));
  return r;
}
