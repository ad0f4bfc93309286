/**
 * A thin, typed layer over @kubernetes/client-node for the few verbs the platform uses, all in one
 * namespace: server-side apply, get, list, delete and watch. API failures become KubeApiError; a 404 on
 * get/delete is an answer (undefined / false), not an error.
 */
import { ApiException, KubernetesObjectApi, PatchStrategy, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { KubeApiError } from './errors.js';

/** An object as read from the API (typed loosely: the platform reads a few well-known fields). */
export type KubeObject = KubernetesObject & { metadata: NonNullable<KubernetesObject['metadata']>; spec?: any; status?: any; data?: any };

const WATCH_SECONDS = 20;

/** An object we built (kubernetes-models types: timestamps are strings, unlike the client's classes). */
export type Manifest = { apiVersion: string; kind: string; metadata?: { name?: string; namespace?: string } };

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface ResourceRef {
  apiVersion: string;
  kind: string;
  /** Plural resource name in URLs (watch paths are built from it). */
  plural: string;
  namespaced: boolean;
}

export const RESOURCE = {
  pod: { apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespaced: true },
  service: { apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  configMap: { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  node: { apiVersion: 'v1', kind: 'Node', plural: 'nodes', namespaced: false },
  deployment: { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
  knativeService: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', plural: 'services', namespaced: true },
  taskDefinition: { apiVersion: 'cornserve.ai/v1', kind: 'TaskDefinition', plural: 'taskdefinitions', namespaced: true },
  executionDescriptor: { apiVersion: 'cornserve.ai/v1', kind: 'ExecutionDescriptor', plural: 'executiondescriptors', namespaced: true },
} as const satisfies Record<string, ResourceRef>;

function reasonOf(e: unknown): { status: number; reason: string } {
  if (e instanceof ApiException) {
    let reason = String(e.message);
    try {
      const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      reason = body?.message ?? body?.reason ?? reason;
    } catch {
      if (typeof e.body === 'string' && e.body) reason = e.body;
    }
    return { status: e.code, reason };
  }
  return { status: 0, reason: (e as Error)?.message ?? String(e) };
}

export class KubeClient {
  private readonly api: KubernetesObjectApi;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig, readonly namespace: string, private readonly fieldManager: string) {
    this.api = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.watcher = new Watch(kubeConfig);
  }

  private async call<T>(verb: string, what: string, fn: () => Promise<T>, missingOk = false): Promise<T | undefined> {
    try {
      return await fn();
    } catch (e) {
      const { status, reason } = reasonOf(e);
      if (missingOk && status === 404) return undefined;
      throw new KubeApiError(verb, what, status, reason);
    }
  }

  private header(ref: ResourceRef, name: string) {
    return { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name, ...(ref.namespaced ? { namespace: this.namespace } : {}) } };
  }

  /** Server-side apply (force: this field manager owns what it sends). Applying the same object twice changes nothing. */
  async apply(obj: Manifest): Promise<KubeObject> {
    const what = `${obj.kind} ${obj.metadata?.name}`;
    return (await this.call('apply', what, () =>
      this.api.patch(obj as KubernetesObject, undefined, undefined, this.fieldManager, true, PatchStrategy.ServerSideApply),
    )) as KubeObject;
  }

  async get(ref: ResourceRef, name: string): Promise<KubeObject | undefined> {
    return (await this.call('get', `${ref.kind} ${name}`, () => this.api.read(this.header(ref, name)), true)) as KubeObject | undefined;
  }

  async list(ref: ResourceRef, labelSelector?: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const list = await this.call('list', ref.plural, () =>
      this.api.list(ref.apiVersion, ref.kind, ref.namespaced ? this.namespace : undefined, undefined, undefined, undefined, undefined, labelSelector),
    );
    return { items: (list?.items ?? []) as KubeObject[], resourceVersion: list?.metadata?.resourceVersion ?? '' };
  }

  /** Deletes by name; false when it was already gone. */
  async delete(ref: ResourceRef, name: string, opts: { gracePeriodSeconds?: number; propagationPolicy?: 'Background' | 'Foreground' } = {}): Promise<boolean> {
    const r = await this.call(
      'delete',
      `${ref.kind} ${name}`,
      () => this.api.delete(this.header(ref, name), undefined, undefined, opts.gracePeriodSeconds, undefined, opts.propagationPolicy),
      true,
    );
    return r !== undefined;
  }

  collectionPath(ref: ResourceRef): string {
    const root = ref.apiVersion === 'v1' ? '/api/v1' : `/apis/${ref.apiVersion}`;
    return ref.namespaced ? `${root}/namespaces/${this.namespace}/${ref.plural}` : `${root}/${ref.plural}`;
  }

  /**
   * Opens a watch (chunked JSON lines). Resolves once the stream is open; `onDone` is called exactly once when
   * it ends (server close, error, or abort through the returned controller).
   */
  async watch(
    ref: ResourceRef,
    params: { resourceVersion?: string; labelSelector?: string; fieldSelector?: string },
    onEvent: (type: WatchEventType, obj: KubeObject) => void,
    onDone: (err: unknown) => void,
  ): Promise<AbortController> {
    const query = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined && v !== '')) as Record<string, string>;
    // The server ends the stream after WATCH_SECONDS (we re-open it from the last version), which keeps it
    // under the client's 30 s inactivity timeout on a quiet namespace.
    return this.watcher.watch(
      this.collectionPath(ref),
      { ...query, timeoutSeconds: WATCH_SECONDS, allowWatchBookmarks: true },
      (type, obj) => onEvent(type as WatchEventType, obj),
      onDone,
    );
  }
}
