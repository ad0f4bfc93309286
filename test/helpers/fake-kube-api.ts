/**
 * A fake Kubernetes API server for tests: node:http on a free loopback port, an in-memory object store,
 * and just enough of the real API for @kubernetes/client-node and our KubernetesPlatform:
 *  - discovery: /api, /apis, /api/v1, /apis/apps/v1, /apis/serving.knative.dev/v1, /apis/cornserve.ai/v1 (APIResourceList);
 *  - get, list (labelSelector with =, ==, !=, exists; fieldSelector metadata.name=), watch (chunked JSON lines,
 *    from a resourceVersion or starting with synthetic ADDED events), create (POST), replace (PUT),
 *    server-side apply (PATCH application/apply-patch+yaml: needs fieldManager; an apply that changes
 *    nothing keeps the resourceVersion and sends no watch event), merge patch, delete (with ownerReference
 *    garbage collection, like the real background cascade);
 *  - every HTTP request is recorded (method, path, query, content type, parsed body).
 * Tests play the controllers and the kubelet by writing objects directly (`put`, `setStatus`, `remove`):
 * those writes emit watch events but are not recorded as requests.
 * Built-in list items carry no apiVersion/kind (as the real server does); custom resources' items do.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { readWhole } from '../../lib/http.js';

/** Request bodies past this are refused (the real API server's limit is 3 MiB per object). */
const MAX_BODY = 16 << 20;

export interface ResourceInfo {
  groupVersion: string; // 'v1' | 'apps/v1' | 'serving.knative.dev/v1'
  name: string; // plural
  kind: string;
  namespaced: boolean;
  builtin: boolean;
}

const RESOURCES: ResourceInfo[] = [
  ...(
    [
      ['pods', 'Pod', true],
      ['services', 'Service', true],
      ['configmaps', 'ConfigMap', true],
      ['secrets', 'Secret', true],
      ['serviceaccounts', 'ServiceAccount', true],
      ['nodes', 'Node', false],
      ['namespaces', 'Namespace', false],
    ] as const
  ).map(([name, kind, namespaced]) => ({ groupVersion: 'v1', name, kind, namespaced, builtin: true })),
  ...(
    [
      ['deployments', 'Deployment'],
      ['replicasets', 'ReplicaSet'],
      ['daemonsets', 'DaemonSet'],
    ] as const
  ).map(([name, kind]) => ({ groupVersion: 'apps/v1', name, kind, namespaced: true, builtin: true })),
  ...(
    [
      ['services', 'Service'],
      ['configurations', 'Configuration'],
      ['revisions', 'Revision'],
      ['routes', 'Route'],
    ] as const
  ).map(([name, kind]) => ({ groupVersion: 'serving.knative.dev/v1', name, kind, namespaced: true, builtin: false })),
  // The task registry's custom resources (knative/base/registry-crds.yaml).
  ...(
    [
      ['taskdefinitions', 'TaskDefinition'],
      ['executiondescriptors', 'ExecutionDescriptor'],
    ] as const
  ).map(([name, kind]) => ({ groupVersion: 'cornserve.ai/v1', name, kind, namespaced: true, builtin: false })),
];

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ uid: string; kind: string; name: string; apiVersion: string }>;
    [k: string]: unknown;
  };
  spec?: any;
  status?: any;
  [k: string]: unknown;
};

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  body?: any;
}

type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
interface StoredEvent { rv: number; type: WatchEventType; resource: ResourceInfo; object: KubeObject }
interface Watcher { resource: ResourceInfo; namespace?: string; labelSelector?: string; fieldSelector?: string; res: ServerResponse; path: string }

export interface FakeKubeApi {
  readonly url: string;
  /** Every HTTP request received so far, in order. */
  readonly requests: RecordedRequest[];
  /** Returns the requests recorded since the last take() (or start) and forgets them. */
  take(): RecordedRequest[];
  /** A KubeConfig pointing at this server (token auth, default namespace). */
  kubeConfig(namespace?: string): KubeConfig;
  /** Creates or replaces an object directly (a controller or the kubelet at work); emits a watch event. */
  put(obj: KubeObject & { apiVersion: string; kind: string }): KubeObject;
  /** Replaces an object's status directly; emits MODIFIED. */
  setStatus(apiVersion: string, kind: string, namespace: string | undefined, name: string, status: unknown): KubeObject;
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined;
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[];
  /** Deletes directly (with garbage collection of dependents); emits DELETED. */
  remove(apiVersion: string, kind: string, namespace: string | undefined, name: string): boolean;
  /** Open watch connections, as request paths with their selectors. */
  watches(): Array<{ path: string; labelSelector?: string; fieldSelector?: string }>;
  /** Ends every open watch stream (the client sees the server close them). */
  closeWatches(): void;
  close(): Promise<void>;
}

const resourceOf = (groupVersion: string, kind: string) => {
  const r = RESOURCES.find((x) => x.groupVersion === groupVersion && x.kind === kind);
  if (!r) throw new Error(`fake-kube-api: unknown ${groupVersion} ${kind}`);
  return r;
};

const keyOf = (r: ResourceInfo, namespace: string | undefined, name: string) => `${r.groupVersion}|${r.name}|${r.namespaced ? namespace ?? '' : ''}|${name}`;

const clone = <T>(v: T): T => structuredClone(v);

/** Label selector: comma-separated `k=v`, `k==v`, `k!=v`, `k`, `!k`. */
export function matchesLabels(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  return selector.split(',').every((term) => {
    const t = term.trim();
    if (!t) return true;
    const ne = t.match(/^([^!=]+)!=(.*)$/);
    if (ne) return l[ne[1]!.trim()] !== ne[2]!.trim();
    const eq = t.match(/^([^!=]+)==?(.*)$/);
    if (eq) return l[eq[1]!.trim()] === eq[2]!.trim();
    if (t.startsWith('!')) return !(t.slice(1) in l);
    return t in l;
  });
}

function matchesFields(obj: KubeObject, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const m = term.match(/^metadata\.(name|namespace)=(.*)$/);
    if (!m) throw new Error(`fake-kube-api: unsupported fieldSelector ${term}`);
    return obj.metadata[m[1] as 'name' | 'namespace'] === m[2];
  });
}

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, message, code });

class HttpFailure extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) {
    super(message);
  }
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const SERVER_META = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields'] as const;

/** Keeps the fields the server owns (uid, versions, timestamps) when an object is rewritten. */
function keepServerMeta(from: KubeObject, to: KubeObject): KubeObject {
  const meta = to.metadata as Record<string, unknown>;
  for (const k of SERVER_META) if (from.metadata[k] !== undefined) meta[k] = from.metadata[k];
  return to;
}

export interface FakeKubeApiOptions {
  /**
   * Delete dependents (ownerReferences) with their owner, like the cluster's garbage collector.
   * Off: a deleted Deployment's pods stay until deleted themselves (the real collector is asynchronous).
   * @default true
   */
  garbageCollection?: boolean;
}

export async function startFakeKubeApi({ garbageCollection = true }: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const objects = new Map<string, { resource: ResourceInfo; object: KubeObject }>();
  const history: StoredEvent[] = [];
  const watchers = new Set<Watcher>();
  const requests: RecordedRequest[] = [];
  let taken = 0;
  let rv = 100;

  const withTypeMeta = (r: ResourceInfo, o: KubeObject): KubeObject => ({ apiVersion: r.groupVersion, kind: r.kind, ...o });

  const emit = (type: WatchEventType, resource: ResourceInfo, object: KubeObject) => {
    const ev: StoredEvent = { rv: Number(object.metadata.resourceVersion), type, resource, object: clone(object) };
    history.push(ev);
    for (const w of watchers) send(w, ev);
  };

  const visible = (w: { resource: ResourceInfo; namespace?: string; labelSelector?: string; fieldSelector?: string }, ev: StoredEvent) =>
    ev.resource === w.resource &&
    (w.namespace === undefined || ev.object.metadata.namespace === w.namespace) &&
    matchesLabels(ev.object.metadata.labels, w.labelSelector) &&
    matchesFields(ev.object, w.fieldSelector);

  const send = (w: Watcher, ev: StoredEvent) => {
    if (!visible(w, ev)) return;
    w.res.write(JSON.stringify({ type: ev.type, object: withTypeMeta(ev.resource, ev.object) }) + '\n');
  };

  const store = (r: ResourceInfo, obj: KubeObject, type: WatchEventType) => {
    obj.metadata.resourceVersion = String(++rv);
    objects.set(keyOf(r, obj.metadata.namespace, obj.metadata.name), { resource: r, object: obj });
    emit(type, r, obj);
    return obj;
  };

  const create = (r: ResourceInfo, obj: KubeObject, manager?: string) => {
    const o = clone(obj);
    delete o.apiVersion;
    delete o.kind;
    o.metadata = { ...o.metadata, uid: o.metadata.uid ?? randomUUID(), generation: 1, creationTimestamp: new Date().toISOString() };
    if (manager) o.metadata.managedFields = [{ manager, operation: 'Apply', apiVersion: r.groupVersion }];
    return store(r, o, 'ADDED');
  };

  const destroy = (r: ResourceInfo, namespace: string | undefined, name: string): boolean => {
    const key = keyOf(r, namespace, name);
    const hit = objects.get(key);
    if (!hit) return false;
    objects.delete(key);
    hit.object.metadata.resourceVersion = String(++rv);
    emit('DELETED', r, hit.object);
    // Background cascade: dependents whose ownerReference points at the deleted object go too.
    if (garbageCollection)
      for (const dep of [...objects.values()])
        if (dep.object.metadata.ownerReferences?.some((o) => o.uid === hit.object.metadata.uid))
          destroy(dep.resource, dep.object.metadata.namespace, dep.object.metadata.name);
    return true;
  };

  /** Server-side apply, simplified to one field manager: the applied object replaces everything but status and server metadata. */
  const apply = (r: ResourceInfo, namespace: string | undefined, name: string, body: KubeObject, manager: string) => {
    if (body.apiVersion !== r.groupVersion || body.kind !== r.kind)
      throw new HttpFailure(400, 'BadRequest', `apply body is ${body.apiVersion}/${body.kind}, URL is for ${r.groupVersion}/${r.kind}`);
    if (body.metadata?.name !== name) throw new HttpFailure(400, 'BadRequest', `apply body names ${body.metadata?.name}, URL names ${name}`);
    if (r.namespaced && body.metadata.namespace !== undefined && body.metadata.namespace !== namespace)
      throw new HttpFailure(400, 'BadRequest', `apply body namespace ${body.metadata.namespace} does not match ${namespace}`);
    const applied = clone(body);
    delete applied.apiVersion;
    delete applied.kind;
    delete applied.status;
    if (r.namespaced) applied.metadata.namespace = namespace;
    const existing = objects.get(keyOf(r, namespace, name))?.object;
    if (!existing) return { object: create(r, applied, manager), created: true };
    const next = keepServerMeta(existing, { ...applied, metadata: { ...applied.metadata }, ...(existing.status !== undefined ? { status: existing.status } : {}) });
    if (isDeepStrictEqual(next, existing)) return { object: existing, created: false };
    if (!isDeepStrictEqual(next.spec, existing.spec)) next.metadata.generation = (existing.metadata.generation ?? 1) + 1;
    return { object: store(r, next, 'MODIFIED'), created: false };
  };

  const readBody = async (req: IncomingMessage) => {
    const text = (await readWhole(req, MAX_BODY)).toString('utf8');
    if (!text) return undefined;
    return req.headers['content-type']?.includes('yaml') ? parseYaml(text) : JSON.parse(text);
  };

  const discovery = (gv: string) => ({
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: gv,
    resources: RESOURCES.filter((r) => r.groupVersion === gv).map((r) => ({
      name: r.name,
      singularName: r.kind.toLowerCase(),
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    })),
  });

  const route = (pathname: string) => {
    const parts = pathname.split('/').filter(Boolean);
    let gv: string;
    let rest: string[];
    if (parts[0] === 'api' && parts[1] === 'v1') [gv, rest] = ['v1', parts.slice(2)];
    else if (parts[0] === 'apis' && parts.length >= 3) [gv, rest] = [`${parts[1]}/${parts[2]}`, parts.slice(3)];
    else return undefined;
    if (rest.length === 0) return { gv, discovery: true as const };
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) [namespace, rest] = [rest[1], rest.slice(2)];
    const r = RESOURCES.find((x) => x.groupVersion === gv && x.name === rest[0]);
    if (!r) throw new HttpFailure(404, 'NotFound', `the server could not find the requested resource ${pathname}`);
    return { gv, resource: r, namespace, name: rest[1], subresource: rest[2] };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://fake');
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
    const query = Object.fromEntries(u.searchParams.entries());
    const contentType = req.headers['content-type'];
    requests.push({ method: req.method ?? 'GET', path: u.pathname, query, ...(contentType ? { contentType } : {}), ...(body !== undefined ? { body } : {}) });
    const json = (code: number, v: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    try {
      if (req.headers.authorization !== 'Bearer test-token') throw new HttpFailure(401, 'Unauthorized', 'Unauthorized');
      if (u.pathname === '/api') return json(200, { kind: 'APIVersions', versions: ['v1'] });
      if (u.pathname === '/apis') {
        const groups = [...new Set(RESOURCES.map((r) => r.groupVersion).filter((g) => g !== 'v1'))].map((gv) => {
          const [group, version] = gv.split('/') as [string, string];
          return { name: group, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
        });
        return json(200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
      }
      const rt = route(u.pathname);
      if (!rt) throw new HttpFailure(404, 'NotFound', `no route ${u.pathname}`);
      if ('discovery' in rt) return json(200, discovery(rt.gv));
      const { resource: r, namespace, name } = rt;
      const notFound = () => new HttpFailure(404, 'NotFound', `${r.name} "${name}" not found`);
      switch (req.method) {
        case 'GET': {
          if (name) {
            const hit = objects.get(keyOf(r, namespace, name));
            if (!hit) throw notFound();
            return json(200, withTypeMeta(r, hit.object));
          }
          const sel = { resource: r, ...(namespace ? { namespace } : {}), labelSelector: query.labelSelector, fieldSelector: query.fieldSelector };
          if (query.watch === 'true' || query.watch === '1') return openWatch(sel, query, res, u.pathname);
          const items = [...objects.values()]
            .filter((o) => visible(sel, { rv: 0, type: 'ADDED', resource: o.resource, object: o.object }))
            .map((o) => (r.builtin ? clone(o.object) : withTypeMeta(r, clone(o.object))));
          return json(200, { apiVersion: r.groupVersion, kind: `${r.kind}List`, metadata: { resourceVersion: String(rv) }, items });
        }
        case 'PATCH': {
          if (!name) throw new HttpFailure(405, 'MethodNotAllowed', 'PATCH needs a name');
          if (contentType?.startsWith('application/apply-patch')) {
            if (!query.fieldManager) throw new HttpFailure(400, 'BadRequest', 'fieldManager is required for apply requests');
            const { object, created } = apply(r, namespace, name, body as KubeObject, query.fieldManager);
            return json(created ? 201 : 200, withTypeMeta(r, object));
          }
          const hit = objects.get(keyOf(r, namespace, name));
          if (!hit) throw notFound();
          const next = mergePatch(hit.object, body) as KubeObject;
          if (isDeepStrictEqual(next, hit.object)) return json(200, withTypeMeta(r, hit.object));
          return json(200, withTypeMeta(r, store(r, next, 'MODIFIED')));
        }
        case 'POST': {
          const obj = body as KubeObject;
          if (objects.has(keyOf(r, namespace, obj.metadata.name))) throw new HttpFailure(409, 'AlreadyExists', `${r.name} "${obj.metadata.name}" already exists`);
          return json(201, withTypeMeta(r, create(r, { ...obj, metadata: { ...obj.metadata, ...(r.namespaced ? { namespace } : {}) } })));
        }
        case 'PUT': {
          const hit = objects.get(keyOf(r, namespace, name!));
          if (!hit) throw notFound();
          const obj = clone(body as KubeObject);
          delete obj.apiVersion;
          delete obj.kind;
          return json(200, withTypeMeta(r, store(r, keepServerMeta(hit.object, obj), 'MODIFIED')));
        }
        case 'DELETE': {
          if (!name) throw new HttpFailure(405, 'MethodNotAllowed', 'collection delete is not supported');
          const hit = objects.get(keyOf(r, namespace, name));
          if (!hit || !destroy(r, namespace, name)) throw notFound();
          return json(200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: r.name, uid: hit.object.metadata.uid } });
        }
        default:
          throw new HttpFailure(405, 'MethodNotAllowed', `${req.method} not supported`);
      }
    } catch (e) {
      if (e instanceof HttpFailure) return json(e.code, status(e.code, e.reason, e.message));
      return json(500, status(500, 'InternalError', (e as Error).message));
    }
  };

  const openWatch = (
    sel: { resource: ResourceInfo; namespace?: string; labelSelector?: string | undefined; fieldSelector?: string | undefined },
    query: Record<string, string>,
    res: ServerResponse,
    path: string,
  ) => {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const w: Watcher = { ...sel, res, path } as Watcher;
    const from = query.resourceVersion;
    if (from && from !== '0') {
      const since = Number(from);
      const oldest = history[0]?.rv ?? rv;
      if (since < oldest - 1) {
        res.end(JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${since}`) }) + '\n');
        return;
      }
      for (const ev of history) if (ev.rv > since) send(w, ev);
    } else {
      for (const o of objects.values())
        send(w, { rv: Number(o.object.metadata.resourceVersion), type: 'ADDED', resource: o.resource, object: o.object });
    }
    watchers.add(w);
    const timeout = query.timeoutSeconds ? setTimeout(() => res.end(), Number(query.timeoutSeconds) * 1000) : undefined;
    res.on('close', () => {
      clearTimeout(timeout);
      watchers.delete(w);
    });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('fake-kube-api: no address');
  const url = `http://127.0.0.1:${addr.port}`;

  const find = (apiVersion: string, kind: string, namespace: string | undefined, name: string) => {
    const r = resourceOf(apiVersion, kind);
    return { r, hit: objects.get(keyOf(r, namespace, name)) };
  };

  return {
    url,
    requests,
    take() {
      const out = requests.slice(taken);
      taken = requests.length;
      return out;
    },
    kubeConfig(namespace = 'default') {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
        users: [{ name: 'u', token: 'test-token' }],
        contexts: [{ name: 'fake', cluster: 'fake', user: 'u', namespace }],
        currentContext: 'fake',
      });
      return kc;
    },
    put(obj) {
      const r = resourceOf(obj.apiVersion, obj.kind);
      const existing = objects.get(keyOf(r, obj.metadata.namespace, obj.metadata.name))?.object;
      if (!existing) return clone(create(r, obj));
      const next = clone(obj) as KubeObject;
      delete next.apiVersion;
      delete next.kind;
      return clone(store(r, keepServerMeta(existing, next), 'MODIFIED'));
    },
    setStatus(apiVersion, kind, namespace, name, st) {
      const { r, hit } = find(apiVersion, kind, namespace, name);
      if (!hit) throw new Error(`fake-kube-api: setStatus of missing ${kind} ${name}`);
      return clone(store(r, { ...hit.object, status: clone(st) }, 'MODIFIED'));
    },
    get(apiVersion, kind, namespace, name) {
      const { hit } = find(apiVersion, kind, namespace, name);
      return hit ? clone(hit.object) : undefined;
    },
    list(apiVersion, kind, namespace) {
      const r = resourceOf(apiVersion, kind);
      return [...objects.values()]
        .filter((o) => o.resource === r && (namespace === undefined || o.object.metadata.namespace === namespace))
        .map((o) => clone(o.object));
    },
    remove(apiVersion, kind, namespace, name) {
      return destroy(resourceOf(apiVersion, kind), namespace, name);
    },
    watches() {
      return [...watchers].map((w) => ({
        path: w.path,
        ...(w.labelSelector ? { labelSelector: w.labelSelector } : {}),
        ...(w.fieldSelector ? { fieldSelector: w.fieldSelector } : {}),
      }));
    },
    closeWatches() {
      for (const w of watchers) w.res.end();
      watchers.clear();
    },
    async close() {
      for (const w of watchers) w.res.end();
      watchers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A kubeconfig file for a (fake) API server at `server`, namespace cornserve; remove() deletes it. */
export async function writeKubeconfig(server: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-kubeconfig-'));
  const path = join(dir, 'config');
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: fake, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: test-token}}]',
      'contexts: [{name: fake, context: {cluster: fake, user: u, namespace: cornserve}}]',
      'current-context: fake',
    ].join('\n'),
  );
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
