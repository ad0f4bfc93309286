/**
 * How the control plane is put together, shared by `cornserve up` (everything in one process, up.ts) and the
 * separate roles (`cornserve resource-manager`, `cornserve gateway`, roles.ts):
 *
 *   compose(name, {redisUrl?}, async (closers, store) => { ... })   store + ordered shutdown of what `build` starts
 *   startLocalPlatform(closers, {...})                              LocalPlatform + one sidecar per node
 *   startGatewayParts(closers, {...})                               AppFunctions + AppManager + gateway, listening
 *
 * Every part pushes how to stop it onto `closers` as soon as it runs; stop() closes them in reverse order (each
 * once, a failing step logged and skipped), and a failed start closes what was already started and rethrows.
 */
import type { Registry } from 'prom-client';
import { AppFunctions, type AppFunctionsOptions } from '../gateway/app-functions.js';
import { AppManager } from '../gateway/app-manager.js';
import { buildGateway, type GatewayDeps } from '../gateway/gateway.js';
import { FunctionLinks } from '../gateway/function-link.js';
import type { FunctionHop } from '../../lib/function-link.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import { attachSessionSocket } from '../gateway/routes/session.js';
import { Sessions } from '../gateway/sessions/sessions.js';
import { checkTaskSource } from '../gateway/source-check.js';
import { TaskRegistry } from '../registry/task-registry.js';
import { REPO_ROOT } from '../gateway/paths.js';
import { listen, type ListeningServer } from '../../lib/listen.js';
import type { LogSink } from '../platform/child.js';
import { LocalPlatform } from '../platform/local.js';
import type { ResourceManagerApi } from '../resources/types.js';
import { createStore, type Store } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { StoreWatch, type StoreHealth } from '../store/watch.js';
import { startNodeSidecars, type NodeSidecars, type StartSidecarsOptions } from './sidecars.js';
import { bodyLimitEnv } from '../../lib/body-limit.js';

export type Closer = () => Promise<unknown>;

export interface ComposeOptions {
  /** Keep all state in Redis; without it an in-memory store (only `cornserve up` runs without Redis). */
  redisUrl?: string;
  /** Redis key prefix. @default the store's ('cornserve:') */
  redisPrefix?: string;
  /** Service name of the spans, which are started only when OTEL_EXPORTER_OTLP_ENDPOINT is set. @default `cornserve-${name}` */
  telemetryName?: string;
}

export interface Composed<T> {
  value: T;
  /** Stops everything `build` started, then closes the store (idempotent). */
  stop(): Promise<void>;
}

/** Opens the store, runs `build` with the closer list; on failure closes what was opened and rethrows. */
export async function compose<T>(name: string, o: ComposeOptions, build: (closers: Closer[], store: Store) => Promise<T>): Promise<Composed<T>> {
  const log = logger(name);
  await startTelemetry(o.telemetryName ?? `cornserve-${name}`); // spans only when an exporter is configured (lib/telemetry)
  const store = createStore(o.redisUrl ? { redisUrl: o.redisUrl, ...(o.redisPrefix ? { prefix: o.redisPrefix } : {}) } : {});
  const closers: Closer[] = [() => store.close()];
  const stopAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((err) => log.error({ err }, 'stop step failed'));
  };
  try {
    await store.ready();
    const value = await build(closers, store);
    let stopping: Promise<void> | undefined;
    return { value, stop: () => (stopping ??= stopAll()) };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/**
 * A StoreWatch on this process's store, stopped with it: `onLost` reconciles what the process runs with a store
 * that came back empty (docs/reliability.md, "The store").
 */
export async function watchStore(closers: Closer[], store: Store, backend: StoreHealth['backend'], onLost: () => Promise<void>): Promise<StoreWatch> {
  const watch = new StoreWatch(store, { backend, onLost });
  await watch.start();
  closers.push(async () => watch.stop());
  return watch;
}

export interface LocalPartsOptions {
  /** Virtual devices. @default 4 */
  devices?: number;
  /** What the devices are (CORNSERVE_DEVICE_KIND for executors). @default 'cpu' */
  deviceKind?: 'cpu' | 'cuda';
  /** Handed to the children (executors, sidecars) that keep state in Redis. */
  storeUrl?: string;
  /** The Redis key prefix the sidecars use. @default 'cornserve:' */
  storePrefix?: string;
  /** Where app functions listen on unix sockets (see LocalPlatform). */
  socketDir?: string;
  logSink?: LogSink;
  /** Extra environment for every child process. */
  env?: Record<string, string>;
  /** Start one sidecar per node. @default true */
  sidecars?: boolean;
  /** Their supervision's probes and restart backoff (control/platform/supervised.ts). @default the supervisor's */
  sidecarSupervision?: StartSidecarsOptions['supervision'];
}

/** The local platform and, unless `sidecars: false`, one sidecar per node (their URLs set on the platform). */
export async function startLocalPlatform(closers: Closer[], o: LocalPartsOptions): Promise<{ platform: LocalPlatform; sidecarUrls: Record<string, string>; sidecars?: NodeSidecars }> {
  const platform = new LocalPlatform({
    repoRoot: REPO_ROOT,
    devices: o.devices ?? 4,
    ...(o.deviceKind ? { deviceKind: o.deviceKind } : {}),
    ...(o.socketDir ? { socketDir: o.socketDir } : {}),
    ...(o.storeUrl ? { storeUrl: o.storeUrl } : {}),
    ...(o.logSink ? { logSink: o.logSink } : {}),
    ...(o.env ? { env: o.env } : {}),
  });
  closers.push(() => platform.shutdown());
  if (!(o.sidecars ?? true)) return { platform, sidecarUrls: {} };
  const sidecars = await startNodeSidecars({
    nodes: await platform.listNodes(), ...(o.logSink ? { sink: o.logSink } : {}), ...(o.env ? { env: o.env } : {}),
    ...(o.storeUrl ? { storeUrl: o.storeUrl, ...(o.storePrefix ? { storePrefix: o.storePrefix } : {}) } : {}),
    ...(o.sidecarSupervision ? { supervision: o.sidecarSupervision } : {}),
  });
  closers.push(() => sidecars.stop());
  for (const [node, url] of Object.entries(sidecars.urls)) platform.setSidecarUrl(node, url);
  return { platform, sidecarUrls: sidecars.urls, sidecars };
}

export interface GatewayPartsOptions {
  store: Store;
  /** Where app functions run: the local platform, or the resource manager's API when the gateway runs apart. */
  platform: AppFunctionsOptions['platform'];
  resources: ResourceManagerApi;
  dispatcherUrl: string;
  adminToken: string;
  /** Where the gateway's metrics are registered. */
  registry: Registry;
  /** Further registries its GET /metrics shows (an in-process dispatcher's). */
  extraRegistries?: Registry[];
  /** The node sidecars' states its GET /health reports. */
  sidecars?: () => Record<string, 'up' | 'down'>;
  bodyLimitBytes?: number;
  /** Extra environment for every app function. */
  childEnv?: Record<string, string>;
  /** Recover the registered apps from the store before listening. */
  recover: boolean;
  /** How long unregister and shutdown let in-flight requests finish (AppManager). @default 30 s */
  drainTimeoutMs?: number;
  /** Kill and restart an app function whose event loop is blocked this long (AppFunctions; 0 = never). @default 30 s */
  blockedLimitMs?: number;
  /** Release an interactive session (WS /session) silent this long (Sessions). @default 30 s */
  sessionTimeoutMs?: number;
  port: number;
  host?: string;
  /** How the gateway calls app functions: over framed links (`up`) or HTTP. @default 'http' (a Knative Service, the gateway role) */
  functionHop?: FunctionHop;
  /** The store's state for GET /health (a StoreWatch's). */
  storeHealth?: GatewayDeps['storeHealth'];
}

/** App functions, the app manager and the gateway, listening on `port` (after recover(), when asked). */
export async function startGatewayParts(closers: Closer[], o: GatewayPartsOptions): Promise<{ apps: AppManager; functions: AppFunctions; server: ListeningServer }> {
  let apps: AppManager | undefined;
  // Before the app functions: it points them (and the source check) at the registered tasks' modules.
  const registry = new TaskRegistry({ store: o.store, log: logger('registry'), check: (source) => checkTaskSource(source) });
  closers.push(() => registry.close());
  await registry.start();
  const functions = new AppFunctions({
    platform: o.platform,
    dispatcherUrl: o.dispatcherUrl,
    log: logger('app-functions'),
    env: { ...o.childEnv, ...bodyLimitEnv(o.bodyLimitBytes) },
    onStateChange: (appId, state) => apps?.onFunctionState(appId, state),
    ...(o.blockedLimitMs !== undefined ? { blockedLimitMs: o.blockedLimitMs } : {}),
  });
  closers.push(() => functions.close());
  apps = new AppManager({ store: o.store, resources: o.resources, functions, log: logger('gateway'), ...(o.drainTimeoutMs !== undefined ? { drainTimeoutMs: o.drainTimeoutMs } : {}) });
  let links: FunctionLinks | undefined;
  if (o.functionHop === 'link') {
    const open = new FunctionLinks(logger('gateway'));
    closers.push(async () => open.close());
    links = open;
  }
  const gateway = buildGateway({
    ...(links ? { links } : {}),
    apps,
    functions,
    resources: o.resources,
    dispatcherUrl: o.dispatcherUrl,
    adminToken: o.adminToken,
    metrics: new GatewayMetrics(o.registry, o.store),
    ...(o.extraRegistries ? { extraRegistries: o.extraRegistries } : {}),
    ...(o.sidecars ? { sidecars: o.sidecars } : {}),
    ...(o.bodyLimitBytes ? { bodyLimitBytes: o.bodyLimitBytes } : {}),
    registry,
    ...(o.storeHealth ? { storeHealth: o.storeHealth } : {}),
  });
  if (o.recover) await apps.recover();
  const server = await listen(gateway, o.port, o.host ?? '127.0.0.1');
  closers.push(() => server.close());
  const sessions = new Sessions({ resources: o.resources, log: logger('sessions'), ...(o.sessionTimeoutMs !== undefined ? { timeoutMs: o.sessionTimeoutMs } : {}) });
  closers.push(attachSessionSocket(server.server, sessions, logger('sessions')));
  // Stopping begins here (closers run in reverse): refuse new requests, drain the ones in flight, then close the rest.
  closers.push(() => apps.shutdown());
  return { apps, functions, server };
}
