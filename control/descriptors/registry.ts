/**
 * Descriptors by root unit-task class and name. Built-ins register here; the dispatcher and the task
 * managers look them up with `descriptorFor(task)`.
 */
import type { TaskDefinitionJSON, UnitTask } from '../../functions/sdk/index.js';
import { CornserveError } from '../../functions/sdk/errors.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';
import { echoDescriptor } from './echo.js';
import { ericDescriptor } from './eric.js';
import { geriDescriptors } from './geri.js';
import { httpJsonDescriptor } from './http-json.js';
import { llmDescriptors } from './llm.js';

const REGISTRY = new Map<string, Map<string, TaskDescriptor<any>>>();

export function registerDescriptor(d: TaskDescriptor<any>): void {
  const byName = REGISTRY.get(d.taskClass) ?? new Map<string, TaskDescriptor>();
  if (byName.has(d.name) && byName.get(d.name) !== d) throw new Error(`descriptor ${d.name} for ${d.taskClass} is already registered`);
  byName.set(d.name, d);
  REGISTRY.set(d.taskClass, byName);
}

/** Removes the descriptors of a root class (a run-time registered task whose definition was removed). */
export function unregisterDescriptors(taskClass: string): void {
  REGISTRY.delete(taskClass);
}

/**
 * A class built from a stored definition (functions/sdk/registered.ts) carries it: its declarative descriptor is
 * derived on first use. Processes that follow the Store install it earlier (control/registry); an app function that
 * dispatches in process has only imported the class (`cornserve/registry/<name>`).
 */
function fromDefinition(root: Function): Map<string, TaskDescriptor<any>> | undefined {
  const def = (root as { definition?: TaskDefinitionJSON }).definition;
  if (!def || def.className !== root.name) return undefined;
  registerDescriptor(httpJsonDescriptor(def));
  return REGISTRY.get(root.name);
}

export function descriptorFor<T extends UnitTask>(task: T): TaskDescriptor<T> {
  const root = task.rootClass.name;
  const byName = REGISTRY.get(root) ?? fromDefinition(task.rootClass);
  if (!byName) throw new CornserveError('NO_DESCRIPTOR', `no execution descriptor is registered for ${root}`, 400);
  const name = task.descriptor ?? 'default';
  const d = byName.get(name);
  if (!d) throw new CornserveError('NO_DESCRIPTOR', `descriptor ${name} is not registered for ${root} (known: ${[...byName.keys()].join(', ')})`, 400);
  return d as TaskDescriptor<T>;
}

registerDescriptor(echoDescriptor);
registerDescriptor(ericDescriptor);
for (const d of llmDescriptors) registerDescriptor(d);
for (const d of geriDescriptors) registerDescriptor(d);
