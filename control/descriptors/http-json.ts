/**
 * The descriptor of a user-defined unit task (functions/sdk/registered.ts): declarative, so no user code runs in
 * the control plane. POST `path` with the invocation's input as the JSON body; the JSON reply is the output.
 */
import type { TaskDefinitionJSON, UnitTask } from '../../functions/sdk/index.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';

export function httpJsonDescriptor(def: TaskDefinitionJSON): TaskDescriptor<UnitTask> {
  const { launch, path } = def.descriptor;
  return {
    name: 'default',
    taskClass: def.className,
    executorName: () => def.name,
    launch: () => ({
      kind: def.name,
      entry: launch.script,
      image: launch.image ?? `cornserve/${def.name}`,
      args: launch.args ?? [],
      ...(launch.env ? { env: launch.env } : {}),
      devicesPerExecutor: launch.devicesPerExecutor ?? 1,
      healthPath: launch.healthPath ?? '/health',
    }),
    request: (_task, input) => ({ path, body: input }),
    response: async (_task, _output, res) => ({ output: await res.json() }),
  };
}
