/**
 * Helpers both backends share, so they agree on the details the contract leaves open:
 * records are copied through JSON (what Redis stores), lists come back in a stable order,
 * and an app's names (name + aliases) form one namespace.
 */
import type { AppRecord, ExecutorLiveStats, ExecutorRoute, SidecarRecord, TaskProfile, TensorChunkMeta, UnitTaskRecord } from '../../lib/store.js';

/** A deep copy with exactly the semantics of a JSON round trip (as Redis stores it). */
export const jsonCopy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The names an app can be found by besides its id, without duplicates. */
export const appNames = (app: AppRecord): string[] => [...new Set([app.name, ...app.aliases])];

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const sortApps = (apps: AppRecord[]) => apps.sort((a, b) => byString(a.appId, b.appId));
export const sortTasks = (tasks: UnitTaskRecord[]) => tasks.sort((a, b) => byString(a.taskId, b.taskId));
export const sortExecutors = (routes: ExecutorRoute[]) => routes.sort((a, b) => byString(a.executorId, b.executorId));
export const sortChunks = (chunks: TensorChunkMeta[]) => chunks.sort((a, b) => byString(a.id, b.id) || a.chunk - b.chunk);
export const sortProfiles = (profiles: TaskProfile[]) => profiles.sort((a, b) => byString(a.taskKey, b.taskKey) || byString(a.deviceKind, b.deviceKind));
export const sortExecutorStats = (stats: ExecutorLiveStats[]) => stats.sort((a, b) => byString(a.executorId, b.executorId));
export const sortSidecars = (sidecars: SidecarRecord[]) => sidecars.sort((a, b) => byString(a.node, b.node));

/** Outstanding counts move by whole requests; Redis HINCRBY takes integers only, so both backends insist. */
export function assertIntegerDelta(delta: number): void {
  if (!Number.isSafeInteger(delta)) throw new RangeError(`outstanding delta must be an integer, got ${delta}`);
}
