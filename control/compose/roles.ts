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
import { listen } from '../../lib/listen.js';
import { descriptorFor } from '../descriptors/registry.js';
import { TaskRegistry } from '../registry/task-registry.js';
import { DEFAULT_APP_LAUNCH, KubernetesPlatform, desiredStateFromStore, kubernetesOptionsFromEnv, type ReconcileReport } from '../platform/kubernetes/index.js';
import type { Platform } from '../../lib/platform.js';
import { ResourceManagerClient } from '../resources/client.js';
import { ResourceManager } from '../resources/manager.js';
import { buildResourceServer } from '../resources/server.js';
import { taskFromRecord } from '../resources/task-records.js';
import type { Store } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { compose, startGatewayParts, startLocalPlatform, watchStore, type Closer } from './compose.js';
import { CliError } from '../../lib/cli-errors.js';

export interface RunningRole {
  url: string;
  /** Stops everything the role started (idempotent). */
  stop(): Promise<void>;
}

/** A role's composition (compose.ts) as the running role: its URL and stop(). */
async function role(name: string, o: { redisUrl: string; redisPrefix?: string | undefined }, build: (closers: Closer[], store: Store) => Promise<string>): Promise<RunningRole> {
  const c = await compose(name, { redisUrl: o.redisUrl, ...(o.redisPrefix ? { redisPrefix: o.redisPrefix } : {}) }, build);
  return { url: c.value, stop: c.stop };
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
  /** Autoscale the tasks (the CLI turns it on unless --no-autoscale). @default false */
  autoscale?: boolean;
}

export function startResourceManagerRole(opts: ResourceManagerRoleOptions): Promise<RunningRole> {
  const log = logger('resource-manager');
  return role('resource-manager', opts, async (closers, store) => {
    // Registered unit tasks first: recovering and reconciling rebuild their tasks.
    const taskRegistry = new TaskRegistry({ store, log: logger('registry') });
    closers.push(() => taskRegistry.close());
    await taskRegistry.start();
    let platform: Platform;
    let sidecarUrls: Record<string, string> = {};
    let reconciled: ReconcileReport | undefined;
    if (opts.platform === 'kubernetes') {
      const kc = new KubeConfig();
      kc.loadFromDefault();
      const k8s = new KubernetesPlatform(kubernetesOptionsFromEnv(opts.env ?? process.env, kc));
      closers.push(() => k8s.shutdown());
      // The registry as custom resources too (`kubectl get taskdefinitions`).
      await taskRegistry.mirrorTo(k8s);
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
      const local = await startLocalPlatform(closers, {
        storeUrl: opts.redisUrl, ...(opts.devices !== undefined ? { devices: opts.devices } : {}), ...(opts.sidecars !== undefined ? { sidecars: opts.sidecars } : {}),
      });
      sidecarUrls = local.sidecarUrls;
      platform = local.platform;
    }
    const registry = new Registry(); // GET /metrics: the autoscaler's gauges per task (desired, actual, demand, capacity)
    const resources = new ResourceManager({
      store, platform, sidecarUrls,
      ...(opts.healthTimeoutMs ? { healthTimeoutMs: opts.healthTimeoutMs } : {}),
      ...(opts.autoscale ? { autoscale: { registry } } : {}), // the same decisions drive local children or Deployments
    });
    closers.push(() => resources.close());
    // Kubernetes: reconcile (above) adopted the running executors, which keep serving; adopt() gives them task
    // managers again (scale, restarts) without restarting them. Local: the children died with the old process.
    if (reconciled) log.info(await resources.adopt({ startedExecutors: reconciled.executors.created }), 'executors adopted');
    else log.info(await resources.recover(), 'tasks recovered');
    // Redis back empty: stop the tasks it no longer records, as `up` does (docs/reliability.md, "The store").
    await watchStore(closers, store, 'redis', async () => { await resources.reconcile(); });
    const app = buildResourceServer({ resources, platform, registry, ...(platform.kind === 'kubernetes' ? { appLaunch: DEFAULT_APP_LAUNCH } : {}) });
    const server = await listen(app, opts.port, opts.host ?? '127.0.0.1');
    closers.push(() => server.close(1_000));
    log.info({ url: server.url, platform: platform.kind }, 'resource manager listening');
    return server.url;
  });
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
  /** See GatewayPartsOptions. */
  drainTimeoutMs?: number;
  blockedLimitMs?: number;
}

export function startGatewayRole(opts: GatewayRoleOptions): Promise<RunningRole> {
  return role('gateway', opts, async (closers, store) => {
    const rm = new ResourceManagerClient(opts.resourceManagerUrl);
    closers.push(async () => rm.close());
    // Redis back empty: the gateway stops the app functions it no longer records; GET /health reports the store.
    let gatewayApps: { reconcile(): Promise<unknown> } | undefined;
    const storeWatch = await watchStore(closers, store, 'redis', async () => { await gatewayApps?.reconcile(); });
    const { server, apps } = await startGatewayParts(closers, {
      store,
      platform: rm,
      resources: rm,
      dispatcherUrl: opts.dispatcherUrl,
      adminToken: opts.adminToken,
      registry: new Registry(),
      ...(opts.bodyLimitBytes ? { bodyLimitBytes: opts.bodyLimitBytes } : {}),
      ...(opts.drainTimeoutMs !== undefined ? { drainTimeoutMs: opts.drainTimeoutMs } : {}),
      ...(opts.blockedLimitMs !== undefined ? { blockedLimitMs: opts.blockedLimitMs } : {}),
      recover: true,
      port: opts.port,
      ...(opts.host ? { host: opts.host } : {}),
      storeHealth: () => storeWatch.health(),
    });
    gatewayApps = apps;
    logger('gateway').info({ url: server.url }, 'gateway listening');
    return server.url;
  });
}

/** Starts a role and leaves it serving; SIGINT / SIGTERM stop it, then the process exits 0 (lib/shutdown). */
export async function runRole(start: () => Promise<RunningRole>, io: { err: (l: string) => void }): Promise<void> {
  const running = await start();
  io.err(`listening on ${running.url}`);
  exitOnSignal(() => running.stop());
}

/** A required setting from a flag or the environment. */
export function required(value: string | undefined, what: string): string {
  if (!value) throw new CliError(`${what} is required`);
  return value;
}
