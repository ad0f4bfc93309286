/**
 * One profiling run of a deployed task (ResourceManager.profile → here): pick one of its ready executors, keep
 * live traffic off it while the sweep runs (its `outstanding` is raised by PROFILING_WEIGHT, so least-outstanding
 * routing prefers every other executor), sweep each devices-per-executor option the descriptor lists that the
 * running executors have, and store the profile under the task's unit-task key and device kind (so an equivalent
 * task in another app finds it).
 *
 * Options whose executor size differs from the running ones are reported as skipped: profiling them needs an
 * executor of that size, which today's descriptors never ask for (each lists one option).
 */
import type { UnitTask } from '../../functions/sdk/index.js';
import type { Logger } from '../../lib/log.js';
import type { TaskProfile } from '../../lib/autoscale.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';
import type { Store, UnitTaskRecord } from '../../lib/store.js';
import { NotProfilableError, ProfileInProgressError } from './errors.js';
import { buildProfile, devicesPerExecutorOptions, sweepConcurrency, type ProfilerOptions } from './profiler.js';
import { TaskNotReadyError } from '../../lib/resource-errors.js';

/** Added to the profiled executor's outstanding count for the length of the run. */
export const PROFILING_WEIGHT = 1000;

/** An executor's outstanding count without the profiler's weight: the requests routed to it (what load readers count). */
export function routedOutstanding(outstanding: number): number {
  return outstanding >= PROFILING_WEIGHT ? outstanding - PROFILING_WEIGHT : outstanding;
}

export interface ProfileRunResult {
  taskId: string;
  executorId: string;
  profile: TaskProfile;
  /** Devices-per-executor options the descriptor lists that were not measured, and why. */
  skipped: Array<{ devicesPerExecutor: number; reason: string }>;
}

const running = new Set<string>();

export async function runProfile(x: {
  store: Store;
  record: UnitTaskRecord;
  task: UnitTask;
  descriptor: TaskDescriptor;
  /** Devices one running executor has (the launch's devicesPerExecutor). */
  devicesPerExecutor: number;
  deviceKind: string;
  options?: ProfilerOptions;
  log: Logger;
}): Promise<ProfileRunResult> {
  const { store, record, task, descriptor, log } = x;
  const taskId = record.taskId;
  if (!descriptor.profiling) throw new NotProfilableError(taskId, record.taskClass);
  if (running.has(taskId)) throw new ProfileInProgressError(taskId);
  const executor = (await store.listExecutors(taskId)).find((r) => r.state === 'ready');
  if (!executor) throw new TaskNotReadyError(taskId, 'without a ready executor to profile');
  running.add(taskId);
  await store.adjustOutstanding(executor.executorId, PROFILING_WEIGHT);
  log.info({ task: taskId, executor: executor.executorId }, 'profiling on a live executor: routing prefers the task’s other executors until done');
  try {
    const points = [];
    const skipped: ProfileRunResult['skipped'] = [];
    for (const devices of devicesPerExecutorOptions(descriptor, task)) {
      if (devices !== x.devicesPerExecutor) {
        skipped.push({ devicesPerExecutor: devices, reason: `the running executors have ${x.devicesPerExecutor} device(s); profiling another size needs an executor of that size` });
        continue;
      }
      const target = { taskId, task, descriptor, executorId: executor.executorId, url: executor.url, devicesPerExecutor: devices };
      points.push(
        ...(await sweepConcurrency(target, {
          ...x.options,
          onPoint: (p) => {
            log.info({ task: taskId, ...p }, 'profile point');
            x.options?.onPoint?.(p);
          },
        })),
      );
    }
    const profile = buildProfile(record.key, x.deviceKind, points, Date.now());
    await store.putProfile(profile);
    log.info({ task: taskId, key: record.key, deviceKind: x.deviceKind, frontier: profile.frontier.length, skipped: skipped.length }, 'profile stored');
    return { taskId, executorId: executor.executorId, profile, skipped };
  } finally {
    running.delete(taskId);
    await store.adjustOutstanding(executor.executorId, -PROFILING_WEIGHT).catch((err) => log.warn({ err, executor: executor.executorId }, 'cannot lower the profiled executor’s outstanding count'));
  }
}
