/**
 * Offline schema validation of Kubernetes and Knative objects with kubernetes-models 4.x and
 * @kubernetes-models/knative (ajv validators compiled into the packages; no cluster, no network).
 * These validators check types, enums and required fields; they do not reject unknown fields, which is
 * why the platform's builders are also typed with the same models (tsc then rejects unknown fields).
 */
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as apiextensions from 'kubernetes-models/apiextensions.k8s.io/v1';
import * as serving from '@kubernetes-models/knative/serving.knative.dev/v1';

type ModelClass = new (data: any) => { validate(): void };

const MODELS: Record<string, ModelClass> = {
  'v1/Namespace': core.Namespace,
  'v1/ConfigMap': core.ConfigMap,
  'v1/Secret': core.Secret,
  'v1/Service': core.Service,
  'v1/ServiceAccount': core.ServiceAccount,
  'v1/Pod': core.Pod,
  'apps/v1/Deployment': apps.Deployment,
  'apps/v1/DaemonSet': apps.DaemonSet,
  'rbac.authorization.k8s.io/v1/Role': rbac.Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRole': rbac.ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': rbac.ClusterRoleBinding,
  'policy/v1/PodDisruptionBudget': policy.PodDisruptionBudget,
  'serving.knative.dev/v1/Service': serving.Service,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': apiextensions.CustomResourceDefinition,
};

/** Throws (naming the object and the schema violations) unless `obj` validates against its kind's schema. */
export function validateManifest(obj: { apiVersion?: string; kind?: string; metadata?: { name?: string } }): void {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const Model = MODELS[key];
  if (!Model) throw new Error(`no validator for ${key} (${obj.metadata?.name ?? '?'})`);
  try {
    new Model(obj).validate();
  } catch (e) {
    throw new Error(`${key} ${obj.metadata?.name ?? '?'}: ${(e as Error).message}`);
  }
}
