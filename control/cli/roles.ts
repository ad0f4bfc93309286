/**
 * The control plane as separate processes (a cluster, or several processes on one machine sharing Redis):
 *
 *   cornserve resource-manager --redis URL --platform local|kubernetes --port 8001
 *     store -> platform (local: child processes + one sidecar per node; kubernetes: KubernetesPlatform from
 *     the environment, reconcile(desiredStateFromStore)) -> ResourceManager (+ adopt() on Kubernetes: the running
 *     executors get task managers without restarting; recover() on the local platform)
 *     -> its HTTP API (server.ts)
 *   cornserve gateway --redis URL --port 8000   (CORNSERVE_RESOURCE_MANAGER_URL, CORNSERVE_DISPATCHER_URL)
 *     store -> ResourceManagerClient (RM API + app functions) -> AppFunctions + AppManager -> gateway -> recover()
 * The dispatcher has its own entry (control/dispatcher/main.ts). `cornserve up` stays the one-process composition.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { AppFunctions } from '../gateway/app-functions.js';
import { AppManager } from '../gateway/app-manager.js';
import { buildGateway } from '../gateway/gateway.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import { REPO_ROOT } from '../gateway/paths.js';
import { listen } from '../gateway/server.js';
import { descriptorFor } from '../descriptors/registry.js';
import { DEFAULT_APP_LAUNCH, KubernetesPlatform, desiredStateFromStore, kubernetesOptionsFromEnv, type ReconcileReport } from '../platform/kubernetes/index.js';
import { LocalPlatform } from '../platform/local.js';
import type { Platform } from '../platform/types.js';
import { ResourceManagerClient } from '../resources/client.js';
import { ResourceManager } from '../resources/manager.js';
import { buildResourceServer } from '../resources/server.js';
import { taskFromRecord } from '../resources/task-records.js';
import { createStore, type Store } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { CliError } from './errors.js';
import { startNodeSidecars } from './sidecars.js';

export interface RunningRole {
  url: string;
  /** Stops everything the role started (idempotent). */
  stop(): Promise<void>;
}

type Closer = () => Promise<unknown>;

/** Runs `build` with a closer list; on failure closes what was opened and rethrows. */
async function compose(name: string, build: (closers: Closer[], store: Store) => Promise<string>, redisUrl: string, redisPrefix?: string): Promise<RunningRole> {
  const log = logger(name);
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) await startTelemetry(`cornserve-${name}`);
  const store = createStore({ redisUrl, ...(redisPrefix ? { prefix: redisPrefix } : {}) });
  const closers: Closer[] = [() => store.close()];
  const stopAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((err) => log.error({ err }, 'stop step failed'));
  };
  try {
    await store.ready();
    const url = await build(closers, store);
    let stopping: Promise<void> | undefined;
    return { url, stop: () => (stopping ??= stopAll()) };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

export interface ResourceManagerRoleOptions {
  redisUrl: string;
  redisPrefix?: string;
  platform: 'local' | 'kubernetes';
  port: number;
  host?: string;
  /** Local platform: virtual devices. @default 4 */
  devices?: number;
  /** Local platform: start one sidecar per node. @default true */
  sidecars?: boolean;
  /** Bound on one executor's start. */
  healthTimeoutMs?: number;
  /** @default process.env (the Kubernetes platform's options come from it) */
  env?: NodeJS.ProcessEnv;
}

export function startResourceManagerRole(opts: ResourceManagerRoleOptions): Promise<RunningRole> {
  const log = logger('resource-manager');
  return compose('resource-manager', async (closers, store) => {
    let platform: Platform;
    let sidecarUrls: Record<string, string> = {};
    let reconciled: ReconcileReport | undefined;
    if (opts.platform === 'kubernetes') {
      const kc = new KubeConfig();
      kc.loadFromDefault();
      const k8s = new KubernetesPlatform(kubernetesOptionsFromEnv(opts.env ?? process.env, kc));
      closers.push(() => k8s.shutdown());
      const report = await k8s.reconcile(
        await desiredStateFromStore(store, {
          launchFor: (record) => {
            const task = taskFromRecord(record);
            return descriptorFor(task).launch(task);
          },
          appFunctionFor: (app) => ({ appId: app.appId, name: app.name, source: app.source, launch: DEFAULT_APP_LAUNCH }),
        }),
      );
      log.info(report, 'reconciled the cluster with the store');
      reconciled = report;
      for (const n of await k8s.listNodes()) if (n.sidecarUrl) sidecarUrls[n.node] = n.sidecarUrl;
      platform = k8s;
    } else {
      const local = new LocalPlatform({ repoRoot: REPO_ROOT, devices: opts.devices ?? 4, storeUrl: opts.redisUrl });
      closers.push(() => local.shutdown());
      if (opts.sidecars ?? true) {
        const sidecars = await startNodeSidecars({ nodes: await local.listNodes() });
        closers.push(() => sidecars.stop());
        sidecarUrls = sidecars.urls;
        for (const [node, url] of Object.entries(sidecarUrls)) local.setSidecarUrl(node, url);
      }
      platform = local;
    }
    const resources = new ResourceManager({ store, platform, sidecarUrls, ...(opts.healthTimeoutMs ? { healthTimeoutMs: opts.healthTimeoutMs } : {}) });
    closers.push(() => resources.close());
    // Kubernetes: reconcile (above) adopted the running executors, which keep serving; adopt() gives them task
    // managers again (scale, restarts) without restarting them. Local: the children died with the old process.
    if (reconciled) log.info(await resources.adopt({ startedExecutors: reconciled.executors.created }), 'executors adopted');
    else log.info(await resources.recover(), 'tasks recovered');
    const app = buildResourceServer({ resources, platform, ...(platform.kind === 'kubernetes' ? { appLaunch: DEFAULT_APP_LAUNCH } : {}) });
    const server = await listen(app, opts.port, opts.host ?? '127.0.0.1');
    closers.push(() => server.close(1_000));
    log.info({ url: server.url, platform: platform.kind }, 'resource manager listening');
    return server.url;
  }, opts.redisUrl, opts.redisPrefix);
}

export interface GatewayRoleOptions {
  redisUrl: string;
  redisPrefix?: string;
  resourceManagerUrl: string;
  dispatcherUrl: string;
  adminToken: string;
  port: number;
  host?: string;
  bodyLimitBytes?: number;
}

export function startGatewayRole(opts: GatewayRoleOptions): Promise<RunningRole> {
  return compose('gateway', async (closers, store) => {
    const rm = new ResourceManagerClient(opts.resourceManagerUrl);
    closers.push(async () => rm.close());
    let apps: AppManager | undefined;
    const functions = new AppFunctions({
      platform: rm,
      dispatcherUrl: opts.dispatcherUrl,
      log: logger('app-functions'),
      ...(opts.bodyLimitBytes ? { env: { CORNSERVE_BODY_LIMIT_BYTES: String(opts.bodyLimitBytes) } } : {}),
      onStateChange: (appId, state) => apps?.onFunctionState(appId, state),
    });
    closers.push(() => functions.close());
    apps = new AppManager({ store, resources: rm, functions, log: logger('gateway') });
    const gateway = buildGateway({
      apps,
      functions,
      resources: rm,
      dispatcherUrl: opts.dispatcherUrl,
      adminToken: opts.adminToken,
      metrics: new GatewayMetrics(new Registry(), store),
      ...(opts.bodyLimitBytes ? { bodyLimitBytes: opts.bodyLimitBytes } : {}),
    });
    await apps.recover();
    const server = await listen(gateway, opts.port, opts.host ?? '127.0.0.1');
    closers.push(() => server.close());
    logger('gateway').info({ url: server.url }, 'gateway listening');
    return server.url;
  }, opts.redisUrl, opts.redisPrefix);
}

/** Runs a role in the foreground until SIGINT / SIGTERM, then stops it and exits 0. */
export async function runRole(start: () => Promise<RunningRole>, io: { err: (l: string) => void }): Promise<void> {
  const role = await start();
  io.err(`listening on ${role.url}`);
  await new Promise<void>((resolve) => {
    const onSignal = () => void role.stop().then(resolve);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  process.exit(0);
}

/** A required setting from a flag or the environment. */
export function required(value: string | undefined, what: string): string {
  if (!value) throw new CliError(`${what} is required`);
  return value;
}
