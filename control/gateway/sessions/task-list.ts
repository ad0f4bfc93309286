/**
 * The reference's `UnitTaskList` wire form, used by POST/DELETE /tasks/usage and the /session socket:
 * `{"_task_list": [{"class_name": "EchoTask", "task": <task JSON, or that JSON as a string>}]}`.
 *
 * The reference double-encodes `task` (a JSON string); this port's clients send the object. Both are accepted.
 * The task JSON is this port's `{id?, descriptor?, config}`; a reference-style flat task (`{id,
 * execution_descriptor_name, ...fields}`) is read as `config = the fields` (names are not case-converted).
 */
import { z } from 'zod';
import { ValidationError, taskFromJSON, type UnitTask, type UnitTaskJSON } from '../../../functions/sdk/index.js';
import '../../../functions/tasks/index.js'; // the built-in task classes for taskFromJSON

const taskListSchema = z.object({
  _task_list: z.array(z.object({ class_name: z.string().min(1), task: z.union([z.string(), z.record(z.string(), z.unknown())]) })),
});

/** Keys of a reference-style flat task that are not part of its config. */
const REFERENCE_META = new Set(['id', 'subtask_attr_names', 'execution_descriptor_name', '__class__']);

function taskJSONOf(raw: string | Record<string, unknown>, at: string): UnitTaskJSON {
  let obj: unknown = raw;
  if (typeof raw === 'string') {
    try {
      obj = JSON.parse(raw);
    } catch (e) {
      throw new ValidationError('task list', [{ path: `${at}.task`, message: `not valid JSON: ${(e as Error).message}` }]);
    }
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new ValidationError('task list', [{ path: `${at}.task`, message: 'must be a JSON object' }]);
  const o = obj as Record<string, unknown>;
  const id = typeof o.id === 'string' ? o.id : '';
  if (o.config && typeof o.config === 'object') {
    return { id, descriptor: typeof o.descriptor === 'string' ? o.descriptor : null, config: o.config as Record<string, unknown> };
  }
  const descriptor = typeof o.execution_descriptor_name === 'string' ? o.execution_descriptor_name : null;
  return { id, descriptor, config: Object.fromEntries(Object.entries(o).filter(([k]) => !REFERENCE_META.has(k))) };
}

/** Parses a UnitTaskList into unit tasks (422 naming the entry for a bad one, unknown class included). */
export function parseTaskList(body: unknown): UnitTask[] {
  const r = taskListSchema.safeParse(body);
  if (!r.success) throw new ValidationError('task list', r.error.issues.map((i) => ({ path: i.path.join('.') || '_task_list', message: i.message })));
  return r.data._task_list.map((entry, i) => {
    const at = `_task_list.${i}`;
    try {
      return taskFromJSON(entry.class_name, taskJSONOf(entry.task, at));
    } catch (e) {
      if (e instanceof ValidationError) throw new ValidationError('task list', e.issues.map((x) => ({ path: `${at}.${x.path}`, message: x.message })));
      throw e;
    }
  });
}

