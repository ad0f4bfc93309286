/**
 * Routing: one executor per invocation, from the routes the task managers keep in the Store.
 * Among a task's `ready` executors the one with the fewest outstanding requests wins; ties rotate
 * (round robin per task). The pick is leased: outstanding +1 now, -1 when the lease is released
 * (after the executor's reply, or its stream, is finished; also on error). Release is idempotent.
 */
import type { TaskGraph, UnitTask } from '../../functions/sdk/index.js';
import { StoreNotFoundError, taskIdOf, type ExecutorRoute, type Store } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { DispatcherError, NoExecutorError, StoreUnavailableError, TaskNotDeployedError, TaskNotReadyError } from './errors.js';

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

export class Router {
  /** taskId -> rotation counter for ties */
  private readonly turn = new Map<string, number>();

  constructor(private readonly store: Store) {}

  /**
   * Leases an executor for every invocation of `graph`. All or nothing: when one invocation cannot be
   * routed, the leases already taken are released and the error is thrown.
   */
  async routeGraph(graph: TaskGraph): Promise<Lease[]> {
    const byTask = new Map<string, number[]>();
    graph.invocations.forEach((inv, i) => {
      const id = taskIdOf(inv.task);
      byTask.set(id, [...(byTask.get(id) ?? []), i]);
    });
    const leases: Lease[] = [];
    const results = await Promise.allSettled(
      [...byTask].map(async ([taskId, invocations]) => {
        for (const lease of await this.routeTask(taskId, graph.invocations[invocations[0]!]!.task, invocations)) leases.push(lease);
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
  private async routeTask(taskId: string, task: UnitTask, invocations: number[]): Promise<Lease[]> {
    const record = await fromStore(`read unit task ${taskId}`, this.store.getTask(taskId));
    if (!record) throw new TaskNotDeployedError(taskId, task.name);
    if (record.state !== 'ready') throw new TaskNotReadyError(taskId, task.name, record.state);
    const routes = await fromStore(`list executors of ${taskId}`, this.store.listExecutors(taskId));
    const ready = routes.filter((r) => r.state === 'ready');
    const leases: Lease[] = [];
    try {
      for (const invocation of invocations) {
        for (;;) {
          const route = this.pick(taskId, ready);
          if (!route) throw new NoExecutorError(taskId, task.name, routes.length);
          try {
            route.outstanding = await fromStore(`lease executor ${route.executorId}`, this.store.adjustOutstanding(route.executorId, +1));
          } catch (e) {
            if (!(e instanceof StoreNotFoundError)) throw e;
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

  private pick(taskId: string, ready: ExecutorRoute[]): ExecutorRoute | undefined {
    if (ready.length === 0) return undefined;
    const least = Math.min(...ready.map((r) => r.outstanding));
    const ties = ready.filter((r) => r.outstanding === least);
    const turn = this.turn.get(taskId) ?? 0;
    this.turn.set(taskId, turn + 1);
    return ties[turn % ties.length];
  }

  private lease(invocation: number, taskId: string, route: ExecutorRoute): Lease {
    let released: Promise<void> | undefined;
    const store = this.store;
    return {
      invocation,
      taskId,
      route: { ...route },
      release() {
        released ??= store.adjustOutstanding(route.executorId, -1).then(
          () => undefined,
          (err: unknown) => {
            // A deleted executor has nothing to decrement; anything else is worth a line in the log.
            if (!(err instanceof StoreNotFoundError)) log.warn({ err, executor: route.executorId }, 'could not release executor lease');
          },
        );
        return released;
      },
    };
  }
}

const routers = new WeakMap<Store, Router>();

/** One Router per Store, so round-robin state is shared by every dispatch in the process. */
export function routerFor(store: Store): Router {
  let r = routers.get(store);
  if (!r) routers.set(store, (r = new Router(store)));
  return r;
}
