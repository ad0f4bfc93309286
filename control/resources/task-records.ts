/**
 * Unit tasks <-> Store records: the id every process derives for a task, the record a deploy writes, and
 * the way back (recovery rebuilds a task from its record with the unit-task class registry).
 */
import {
  CornserveError,
  getTaskClass,
  registeredTaskClasses,
  rootUnitTaskClass,
  taskFromJSON,
  unitTaskKey,
  type UnitTask,
  type UnitTaskJSON,
} from '../../functions/sdk/index.js';
import '../../functions/tasks/index.js'; // registers the built-in task classes
import { taskIdOf } from '../store/task-id.js';
import type { UnitTaskRecord } from '../../lib/store.js';

/** The JSON kept in `UnitTaskRecord.task`: the task's own JSON plus its concrete class (to rebuild it). */
export interface StoredTaskJSON extends UnitTaskJSON {
  class: string;
}

export function newTaskRecord(task: UnitTask): Omit<UnitTaskRecord, 'usage'> {
  return {
    taskId: taskIdOf(task),
    key: unitTaskKey(task),
    taskClass: task.rootClass.name,
    task: { ...task.toJSON(), class: task.constructor.name } satisfies StoredTaskJSON,
    state: 'deploying',
    devices: [],
    updatedAt: Date.now(),
  };
}

/** The concrete class of the task a record describes: its stored class, else any registered class with the same root. */
export function taskClassNameOf(record: Pick<UnitTaskRecord, 'task' | 'taskClass'>): string | undefined {
  const json = record.task as Partial<StoredTaskJSON>;
  const sameRoot = registeredTaskClasses().filter((name) => rootUnitTaskClass(getTaskClass(name)!).name === record.taskClass);
  return [json.class, ...sameRoot].find((name) => name !== undefined && getTaskClass(name) !== undefined);
}

/** Rebuilds the task a record describes (its class: taskClassNameOf). */
export function taskFromRecord(record: UnitTaskRecord): UnitTask {
  const json = record.task as Partial<StoredTaskJSON>;
  const className = taskClassNameOf(record);
  if (!className) throw new CornserveError('TASK_CLASS_UNKNOWN', `no registered unit task class has root ${record.taskClass}; cannot rebuild ${record.taskId}`, 500);
  return taskFromJSON(className, { id: json.id ?? record.taskId, descriptor: json.descriptor ?? null, config: json.config ?? {} });
}
