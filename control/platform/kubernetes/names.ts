/**
 * Kubernetes names and labels for cornserve objects. Ids from the control plane may be longer than 63
 * characters or hold characters Kubernetes refuses, so every name and label value goes through here:
 * readable when the id is already valid, otherwise sanitised and suffixed with a hash of the full id
 * (so two ids never share a name). Full ids also travel in annotations, which have no such limits.
 */
import { createHash } from 'node:crypto';

export const LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  partOf: 'app.kubernetes.io/part-of',
  component: 'app.kubernetes.io/component',
  name: 'app.kubernetes.io/name',
  taskId: 'cornserve.ai/task-id',
  executorId: 'cornserve.ai/executor-id',
  executorKind: 'cornserve.ai/executor-kind',
  appId: 'cornserve.ai/app-id',
  appName: 'cornserve.ai/app-name',
} as const;

export const ANNOTATION = {
  executorId: 'cornserve.ai/executor-id',
  taskId: 'cornserve.ai/task-id',
  node: 'cornserve.ai/node',
  devices: 'cornserve.ai/devices',
  appId: 'cornserve.ai/app-id',
  sourceHash: 'cornserve.ai/source-sha256',
} as const;

export const MANAGED_BY = 'cornserve';
export type Component = 'executor' | 'app-function';

/** Label selector for the objects the platform owns of one component. */
export const managedSelector = (component: Component) => `${LABEL.managedBy}=${MANAGED_BY},${LABEL.component}=${component}`;

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/**
 * A DNS-1035 label (`[a-z]([-a-z0-9]*[a-z0-9])?`, at most `max` characters) made of `prefix` + `id`.
 * `prefix` must start with a letter. Ids that are not valid as they are get `-<8 hex of sha256(id)>` appended.
 */
export function dnsName(prefix: string, id: string, max = 63): string {
  const clean = id.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
  const plain = `${prefix}${clean}`;
  if (clean === id && clean.length > 0 && plain.length <= max) return plain;
  const room = max - prefix.length - 9;
  const head = clean.slice(0, Math.max(0, room)).replace(/-$/, '');
  return `${prefix}${head ? `${head}-` : ''}${shortHash(id)}`;
}

/** A label value (at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends); hashed like dnsName when needed. */
export function labelValue(v: string): string {
  if (/^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/.test(v)) return v;
  const clean = v.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  const head = clean.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '');
  return `${head ? `${head}-` : ''}${shortHash(v)}`;
}

/** Deployment and Service of one executor. */
export const executorObjectName = (executorId: string) => dnsName('cs-exec-', executorId);

/**
 * Knative Service of one app. At most 49 characters: Knative derives `<name>-00001` (revision) and
 * `<name>-00001-private` (Kubernetes Service) from it, and those must fit in 63.
 */
export const appObjectName = (appName: string) => dnsName('cs-app-', appName, 49);

export const SOURCE_CONFIGMAP_SUFFIX = '-source';

/** ConfigMap that holds the source of the app whose Knative Service is `objectName`. */
export const sourceConfigMapOf = (objectName: string) => `${objectName}${SOURCE_CONFIGMAP_SUFFIX}`;

/** ConfigMap that holds an app's source. */
export const appSourceConfigMapName = (appName: string) => sourceConfigMapOf(appObjectName(appName));
