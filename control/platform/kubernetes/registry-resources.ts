/**
 * The task registry as custom resources (knative/base/registry-crds.yaml): one TaskDefinition (the class and
 * its schemas) and one ExecutionDescriptor (how its executor launches) per registered unit task, both named
 * after the task. The Store stays the source of truth; these make `kubectl get taskdefinitions` show it.
 */
import type { TaskDefinitionJSON } from '../../../functions/sdk/index.js';
import type { TaskDefinitionRecord } from '../../store/index.js';
import { LABEL, MANAGED_BY } from './names.js';
import type { Manifest } from './client.js';

export const REGISTRY_API_VERSION = 'cornserve.ai/v1';

const metadata = (name: string, namespace: string) => ({
  name,
  namespace,
  labels: { [LABEL.managedBy]: MANAGED_BY, [LABEL.partOf]: 'cornserve', [LABEL.component]: 'task-registry' },
});

/** The two objects for one registered definition, ready for server-side apply. */
export function registryResources(record: TaskDefinitionRecord, namespace: string): Manifest[] {
  const def = record.definition as TaskDefinitionJSON;
  const taskDefinition = {
    apiVersion: REGISTRY_API_VERSION,
    kind: 'TaskDefinition',
    metadata: metadata(record.name, namespace),
    spec: {
      name: def.name,
      className: def.className,
      digest: record.digest,
      registeredAt: new Date(record.registeredAt).toISOString(),
      configSchema: def.configSchema,
      inputSchema: def.inputSchema,
      outputSchema: def.outputSchema,
      descriptorRef: record.name,
    },
  };
  const executionDescriptor = {
    apiVersion: REGISTRY_API_VERSION,
    kind: 'ExecutionDescriptor',
    metadata: metadata(record.name, namespace),
    spec: { taskClass: def.className, kind: def.descriptor.kind, path: def.descriptor.path, launch: def.descriptor.launch },
  };
  return [executionDescriptor, taskDefinition];
}
