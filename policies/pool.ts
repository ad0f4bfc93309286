/**
 * A fixed device pool shared by every task (pure). When the executors the tasks want do not fit, the devices go
 * where they raise the worst served ÷ offered ratio: every task keeps its min, then executors are handed out one
 * at a time to the task (among those wanting more) whose served ÷ offered is lowest — the bottleneck of the worst
 * app. A task holding more than it gets (spare capacity) gives devices back; its executors are drained before the
 * devices move (the loop scales it down before the receivers up). Every cut is explained in its reason.
 */
export interface PoolTask {
  taskId: string;
  /** Executors now. */
  current: number;
  /** Executors the task's policy asks for (TaskWant.to). */
  want: number;
  min: number;
  devicesPerExecutor: number;
  /** Offered load (req/s) and what one executor serves (req/s; undefined = unknown). */
  demandRps: number;
  perExecutorRps?: number;
}

export interface PoolGrant {
  taskId: string;
  to: number;
  /** Set when the pool changed the task's count: why. */
  reason?: string;
}

/** served ÷ offered of a task given `n` executors (1 when nothing is offered; by count when capacity is unknown). */
function servedRatio(t: PoolTask, n: number): number {
  if (t.demandRps <= 0) return n >= t.want ? 1 : n / Math.max(1, t.want);
  if (t.perExecutorRps && t.perExecutorRps > 0) return Math.min(1, (n * t.perExecutorRps) / t.demandRps);
  return Math.min(1, n / Math.max(1, t.want));
}

export function planPool(tasks: PoolTask[], poolDevices: number): PoolGrant[] {
  const wanted = tasks.reduce((a, t) => a + t.want * t.devicesPerExecutor, 0);
  if (wanted <= poolDevices) return tasks.map((t) => ({ taskId: t.taskId, to: t.want }));

  const to = new Map(tasks.map((t) => [t.taskId, Math.min(t.min, t.want)]));
  let free = poolDevices - tasks.reduce((a, t) => a + to.get(t.taskId)! * t.devicesPerExecutor, 0);
  for (;;) {
    const candidates = tasks.filter((t) => to.get(t.taskId)! < t.want && t.devicesPerExecutor <= free);
    if (candidates.length === 0) break;
    // The lowest served ÷ offered first; ties: the one holding more now (fewer moves), then by id (deterministic).
    candidates.sort((a, b) => servedRatio(a, to.get(a.taskId)!) - servedRatio(b, to.get(b.taskId)!) || b.current - a.current || (a.taskId < b.taskId ? -1 : 1));
    const pick = candidates[0]!;
    to.set(pick.taskId, to.get(pick.taskId)! + 1);
    free -= pick.devicesPerExecutor;
  }

  const receivers = tasks.filter((t) => to.get(t.taskId)! > t.current).map((t) => t.taskId);
  return tasks.map((t) => {
    const n = to.get(t.taskId)!;
    if (n >= t.want) return { taskId: t.taskId, to: n };
    const ratio = servedRatio(t, n).toFixed(2);
    const reason =
      n < t.current
        ? `pool of ${poolDevices} devices full: ${t.current - n} executor(s) moved to ${receivers.join(', ') || 'other tasks'} (served ÷ offered here ${ratio})`
        : `pool of ${poolDevices} devices full: wanted ${t.want}, got ${n} (served ÷ offered ${ratio})`;
    return { taskId: t.taskId, to: n, reason };
  });
}
