/**
 * Deterministic unit-task ids: every process derives the same id from the same unit-task key,
 * so no coordination is needed to agree on which deployed task an app uses.
 */
import { createHash } from 'node:crypto';
import { unitTaskKey, type UnitTask } from '../../functions/sdk/task.js';

/** `${taskClass.toLowerCase()}-${sha256(key) first 12 hex}`, e.g. "encodertask-3f2a9c0d41be". */
export function taskIdFor(taskClass: string, key: string): string {
  return `${taskClass.toLowerCase()}-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
}

/** The id of a unit task: equivalent tasks (same root class, descriptor and config) get the same id. */
export const taskIdOf = (task: UnitTask): string => taskIdFor(task.rootClass.name, unitTaskKey(task));
