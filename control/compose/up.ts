/**
 * `cornserve up`: the whole platform in one foreground process.
 *
 *   store (memory, or Redis with --redis) -> LocalPlatform (child processes) + one sidecar per node -> ResourceManager (+ recover()
 *   on Redis) -> dispatcher (in-process, own free port) -> gateway (AppFunctions + AppManager, + recover()
 *   on Redis) -> register every app in --apps DIR.
 * The hops inside this machine (gateway -> app function -> dispatcher) go over unix sockets in a temp folder of the
 * run (removed on stop); the gateway port, the dispatcher's own port and the executors stay TCP. By default the app
 * functions run their task graphs themselves (in-process dispatch, no hop to the dispatcher): over Redis with
 * --redis, else over the in-memory Store this process serves them on its store link (control/store/link-server.ts).
 *
 * Ctrl-C / SIGTERM first drains the gateway (new requests get 503 SHUTTING_DOWN; in-flight ones get
 * `drainTimeoutMs` to finish, then are cut with that error), then stops the gateway, every app function and
 * executor (platform.shutdown) and the dispatcher, closes the store and exits 0. The children run in their own
 * process group, so a terminal's Ctrl-C reaches only `up`, which stops them in that order.
 * A start first removes the temp folders (app sources, sockets, sidecar sockets) of runs whose process is dead
 * (kill -9), like the sidecar does for its shared memory. startCornserve() is the same composition for tests
 * (test/helpers/platform.ts) and benchmarks.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { basename, delimiter, join, relative, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { startDispatcher, type RunningDispatcher } from '../dispatcher/server.js';
import { APP_SOURCES_DIR_PREFIX, type AppFunctions } from '../gateway/app-functions.js';
import type { AppManager, RegistrationEvent } from '../gateway/app-manager.js';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { devicesOption } from '../platform/gpus.js';
import { EXECUTION_PROVIDER_ENV, type GpuProvider } from '../../executors/models/providers.js';
import type { LocalPlatform } from '../platform/local.js';
import type { LogSink } from '../platform/child.js';
import { ResourceManager } from '../resources/manager.js';
import type { AutoscaleLoopOptions } from '../resources/autoscale-loop.js';
import type { Store } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { makeOwnedTempDir, removeStaleTempDirs } from '../../lib/temp-dirs.js';
import type { Io } from '../../lib/io.js';
import { compose, startGatewayParts, startLocalPlatform, watchStore } from './compose.js';
import { SIDECARS_DIR_PREFIX, type NodeSidecars, type StartSidecarsOptions } from './sidecars.js';
import { SidecarDownError } from '../gateway/errors.js';
import { printAppUsage, printBanner } from './up-output.js';
import { bodyLimitEnv, hopBodyLimitBytes } from '../../lib/body-limit.js';
import { MODELS_ENV, modelDirs } from '../../executors/models/model-dirs.js';
import { DISPATCH_ENV, type DispatchMode } from '../../functions/runtime/dispatch-mode.js';
import { FUNCTION_HOP_ENV, functionHopOf, type FunctionHop } from '../../lib/function-link.js';
import { serveStoreLink } from '../store/link-server.js';
import { checkPortFree } from '../../lib/net.js';

/** The run's folder of unix sockets (gateway -> app function -> dispatcher); short: socket paths are limited to 107 bytes. */
export const SOCKET_DIR_PREFIX = 'cs-up-';
/** Temp folders a run of `up` owns (named with its pid): the ones of dead runs are removed at start. */
export const RUN_DIR_PREFIXES = [SOCKET_DIR_PREFIX, SIDECARS_DIR_PREFIX, APP_SOURCES_DIR_PREFIX];

export interface CornserveOptions {
  /** Gateway port; 0 = any free port. @default 8000 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Devices on the local node. @default 4 */
  devices?: number;
  /** What they are: 'cuda' when `--devices auto` found GPUs (control/platform/gpus.ts). @default 'cpu' */
  deviceKind?: 'cpu' | 'cuda';
  /** Keep all state in Redis (restart recovers apps and tasks). */
  redisUrl?: string;
  /** Redis key prefix. @default 'cornserve:' */
  redisPrefix?: string;
  /** Admin token; generated when absent (see `generatedToken`). */
  adminToken?: string;
  /** Register every *.ts app in this folder at start. */
  appsDir?: string;
  /** The platform's body limit (the gateway's; every hop behind it takes more, lib/body-limit.ts). @default $CORNSERVE_BODY_LIMIT_BYTES, else 32 MiB */
  bodyLimitBytes?: number;
  /** Where child-process output lines go. @default prefixed on stderr */
  logSink?: LogSink;
  /** Extra environment for every child process (executors and app functions). */
  childEnv?: Record<string, string>;
  /** Start one sidecar per node (needed by apps that forward tensors). @default true */
  sidecars?: boolean;
  /** The sidecars' health probes and restart backoff (control/platform/supervised.ts). @default the supervisor's */
  sidecarSupervision?: StartSidecarsOptions['supervision'];
  /** Told about every registration event of the --apps registrations. */
  onRegistration?: (file: string, e: RegistrationEvent) => void;
  /** How long unregister and Ctrl-C let in-flight requests finish before cutting them. @default 30 s */
  drainTimeoutMs?: number;
  /** Kill and restart an app function whose event loop is blocked this long (0 = never). @default 30 s */
  blockedLimitMs?: number;
  /** Release an interactive session (WS /session) silent this long. @default 30 s */
  sessionTimeoutMs?: number;
  /**
   * How app functions run their task graphs (functions/runtime/dispatch-mode.ts): 'in-process' (no hop to the
   * dispatcher; leases counted in Redis with redisUrl, else in this process's Store through its store link),
   * 'cloudevent' (through the dispatcher service), 'auto' = in-process. @default $CORNSERVE_DISPATCH, else 'auto'
   */
  dispatch?: UpDispatch;
  /**
   * How the gateway calls the app functions (lib/function-link.ts): 'link' (one framed connection per function,
   * requests multiplexed on it) or 'http' (one HTTP request per invocation over a keep-alive pool).
   * @default $CORNSERVE_FUNCTION_HOP, else 'link'
   */
  functionHop?: FunctionHop;
  /**
   * Autoscale the unit tasks (control/resources/autoscale-loop.ts) with these options (windows, tick; tests use short
   * ones); false = manual scaling only (`cornserve up --no-autoscale`). @default {} (on, as `cornserve up`)
   */
  autoscale?: AutoscaleLoopOptions | false;
}

export type UpDispatch = 'auto' | DispatchMode;

/**
 * The dispatch mode of `up`'s app functions: in-process unless cloudevent is asked for. The executor leases stay
 * counts every app function and the dispatcher service share: in Redis, or in the in-memory Store of the `up`
 * process, which its app functions reach through the store link.
 */
export function upDispatchMode(requested: UpDispatch): DispatchMode {
  return requested === 'auto' ? 'in-process' : requested;
}

/** The store link's socket in the run's socket folder (plain `up`, in-process dispatch). */
const STORE_LINK_SOCKET = 'store.sock';

export interface Cornserve {
  gatewayUrl: string;
  dispatcherUrl: string;
  /** How the app functions run task graphs (upDispatchMode). */
  dispatchMode: DispatchMode;
  /** How the gateway calls the app functions (lib/function-link.ts). */
  functionHop: FunctionHop;
  adminToken: string;
  /** True when the token was generated (print it once). */
  generatedToken: boolean;
  store: Store;
  platform: LocalPlatform;
  resources: ResourceManager;
  apps: AppManager;
  functions: AppFunctions;
  metrics: Registry;
  /** The node sidecars (absent with sidecars: false). */
  sidecars?: NodeSidecars;
  /** The --apps registrations: file -> the final or error event. */
  registrations: Array<{ file: string; result: RegistrationEvent }>;
  /** Stops everything (idempotent). With Redis the state stays for the next `up`. */
  stop(): Promise<void>;
}

export async function startCornserve(opts: CornserveOptions = {}): Promise<Cornserve> {
  // A busy gateway port fails here, before any store, sidecar or executor is started (and then stopped again).
  if ((opts.port ?? 8000) !== 0) await checkPortFree(opts.port ?? 8000, opts.host ?? '127.0.0.1');
  const adminToken = opts.adminToken || randomBytes(24).toString('base64url');
  const where = { ...(opts.redisUrl ? { redisUrl: opts.redisUrl } : {}), ...(opts.redisPrefix ? { redisPrefix: opts.redisPrefix } : {}) };
  const stale = await removeStaleTempDirs(RUN_DIR_PREFIXES);
  if (stale.length) logger('up').info({ stale }, `removed ${stale.length} temp folder(s) left by cornserve runs that died without cleaning up`);
  const dispatchMode = upDispatchMode(opts.dispatch ?? ((process.env[DISPATCH_ENV.mode] || 'auto') as UpDispatch));
  const functionHop = opts.functionHop ?? functionHopOf(process.env[FUNCTION_HOP_ENV]);
  const composed = await compose('up', { ...where, telemetryName: 'cornserve' }, async (closers, store) => {
    // The local hops (gateway -> app function -> dispatcher) use unix sockets in a folder of this run (lib/unix-url.ts).
    const socketDir = await makeOwnedTempDir(SOCKET_DIR_PREFIX);
    closers.push(() => rm(socketDir, { recursive: true, force: true }));
    // What the app functions need to run graphs in process (the gateway passes childEnv on to them).
    const functionEnv: Record<string, string> = { ...opts.childEnv, [DISPATCH_ENV.mode]: dispatchMode };
    if (dispatchMode === 'in-process' && opts.redisUrl) {
      functionEnv[DISPATCH_ENV.storeUrl] = opts.redisUrl;
      if (opts.redisPrefix) functionEnv[DISPATCH_ENV.storePrefix] = opts.redisPrefix;
    } else if (dispatchMode === 'in-process') {
      const link = await serveStoreLink(store, join(socketDir, STORE_LINK_SOCKET));
      closers.push(() => link.close());
      functionEnv[DISPATCH_ENV.storeSocket] = link.socketPath;
    }
    const { platform, sidecarUrls, sidecars } = await startLocalPlatform(closers, {
      socketDir,
      ...(opts.devices !== undefined ? { devices: opts.devices } : {}),
      ...(opts.deviceKind ? { deviceKind: opts.deviceKind } : {}),
      ...(opts.redisUrl ? { storeUrl: opts.redisUrl, ...(opts.redisPrefix ? { storePrefix: opts.redisPrefix } : {}) } : {}),
      ...(opts.logSink ? { logSink: opts.logSink } : {}),
      env: { ...opts.childEnv, ...bodyLimitEnv(opts.bodyLimitBytes) }, // executors take what the gateway takes (lib/body-limit.ts)
      ...(opts.sidecars !== undefined ? { sidecars: opts.sidecars } : {}),
      ...(opts.sidecarSupervision ? { sidecarSupervision: opts.sidecarSupervision } : {}),
    });
    const autoscaleRegistry = new Registry();
    const autoscale = opts.autoscale ?? {};
    const resources = new ResourceManager({ store, platform, sidecarUrls, ...(autoscale ? { autoscale: { registry: autoscaleRegistry, ...autoscale } } : {}) });
    closers.push(() => resources.close());
    if (opts.redisUrl) await resources.recover();
    // The store's state for /health, and what happens when Redis comes back empty (docs/reliability.md, "The store"):
    // the apps and tasks it no longer records are stopped, so nothing runs orphaned and each can be registered again.
    let gatewayApps: AppManager | undefined;
    const storeWatch = await watchStore(closers, store, opts.redisUrl ? 'redis' : 'memory', async () => {
      await gatewayApps?.reconcile();
      await resources.reconcile();
    });

    const dispatcherRegistry = new Registry();
    const dispatcher: RunningDispatcher = await startDispatcher({
      store, registry: dispatcherRegistry, socketPath: join(socketDir, 'dispatcher.sock'),
      // App functions lease the same executors through the store link: the service's router is no longer the only leaser.
      ...(functionEnv[DISPATCH_ENV.storeSocket] ? { router: { cacheRoutes: 'one-ready' as const } } : {}),
      ...(opts.bodyLimitBytes ? { bodyLimit: hopBodyLimitBytes(opts.bodyLimitBytes) } : {}),
    });
    closers.push(() => dispatcher.close());

    const gatewayRegistry = new Registry();
    const { apps, functions, server } = await startGatewayParts(closers, {
      store,
      platform,
      resources,
      dispatcherUrl: dispatcher.localUrl ?? dispatcher.url,
      adminToken,
      registry: gatewayRegistry,
      extraRegistries: [dispatcherRegistry, autoscaleRegistry],
      ...(sidecars ? { sidecars: sidecars.states } : {}),
      ...(opts.bodyLimitBytes ? { bodyLimitBytes: opts.bodyLimitBytes } : {}),
      childEnv: functionEnv,
      recover: Boolean(opts.redisUrl),
      ...(opts.drainTimeoutMs !== undefined ? { drainTimeoutMs: opts.drainTimeoutMs } : {}),
      ...(opts.blockedLimitMs !== undefined ? { blockedLimitMs: opts.blockedLimitMs } : {}),
      ...(opts.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: opts.sessionTimeoutMs } : {}),
      port: opts.port ?? 8000,
      ...(opts.host ? { host: opts.host } : {}),
      functionHop,
      storeHealth: () => storeWatch.health(),
    });
    if (sidecars) closers.push(followSidecars(sidecars, resources, apps));
    gatewayApps = apps;
    const registrations = opts.appsDir ? await registerAppsDir(apps, opts.appsDir, opts.onRegistration) : [];
    return {
      gatewayUrl: server.url,
      dispatcherUrl: dispatcher.url,
      dispatchMode,
      functionHop,
      adminToken,
      generatedToken: !opts.adminToken,
      store,
      platform,
      resources,
      apps,
      functions,
      metrics: Registry.merge([gatewayRegistry, dispatcherRegistry]),
      ...(sidecars ? { sidecars } : {}),
      registrations,
    };
  });
  return { ...composed.value, stop: composed.stop };
}

/**
 * While a node's sidecar is down (its supervisor restarts it): the executors there that move tensors leave the routes,
 * and the requests in flight through them are answered at once (503 SIDECAR_DOWN) rather than at their deadline: the
 * tensors they were moving died with it. Returns the closer that stops following.
 */
function followSidecars(sidecars: NodeSidecars, resources: ResourceManager, apps: AppManager): () => Promise<void> {
  const log = logger('up');
  const off = sidecars.onChange((node, state, reason) => {
    resources.setSidecarState(node, state);
    if (state === 'up') return log.info({ node }, `the sidecar of node ${node} is back: its executors are routed to again`);
    const cut = apps.cutUsing(resources.tasksMovingTensorsOn(node), new SidecarDownError(node, reason));
    log.error({ node, reason, cut }, `the sidecar of node ${node} is down (${reason}): restarting it; ${cut} request(s) in flight answered 503 SIDECAR_DOWN`);
  });
  return async () => off();
}

async function appFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).sort();
  return names.map((f) => resolve(join(dir, f)));
}

/** Registers every app file in `dir`, one after the other; resolves with each file's final or error event. */
async function registerAppsDir(
  apps: AppManager,
  dir: string,
  onEvent: (file: string, e: RegistrationEvent) => void = () => {},
): Promise<Array<{ file: string; result: RegistrationEvent }>> {
  const results: Array<{ file: string; result: RegistrationEvent }> = [];
  for (const file of await appFiles(dir)) {
    if (apps.stopping) break; // Ctrl-C: no further registrations
    let result: RegistrationEvent = { type: 'error', message: 'no final event' };
    await apps.register({ source: await readFile(file, 'utf8'), fileName: basename(file) }, (e) => {
      onEvent(file, e);
      if (e.type === 'final' || e.type === 'error') result = e;
    });
    results.push({ file, result });
  }
  return results;
}

export interface UpCommandOptions {
  port: string;
  host: string;
  /** A count of virtual CPU devices, or 'auto' (nvidia-smi's GPUs, else CPU devices). */
  devices: string;
  /** Executors run on the CPU (loudly) when GPUs were found but onnxruntime has no CUDA provider. */
  allowCpuFallback?: boolean;
  executionProvider?: GpuProvider;
  redis?: string;
  apps?: string;
  /** Model directories, colon-separated (CORNSERVE_MODELS for every executor). */
  models?: string;
  adminToken?: string;
  bodyLimit: string;
  /** ms (parsed by the option) */
  drainTimeout: number;
  /** ms (parsed by the option) */
  blockedLimit: number;
  dispatch: UpDispatch;
  functionHop: FunctionHop;
  /** false with --no-autoscale */
  autoscale: boolean;
  /** ms (parsed by the options); absent = the autoscaler's defaults */
  autoscaleTick?: number;
  autoscaleStableWindow?: number;
  autoscalePanicWindow?: number;
  autoscaleScaleDownDelay?: number;
}

/** startCornserve's autoscale option from `up`'s flags: false with --no-autoscale, else the timings given. */
export function upAutoscaleOptions(opts: Pick<UpCommandOptions, 'autoscale' | 'autoscaleTick' | 'autoscaleStableWindow' | 'autoscalePanicWindow' | 'autoscaleScaleDownDelay'>): AutoscaleLoopOptions | false {
  if (opts.autoscale === false) return false;
  const autoscaler = {
    ...(opts.autoscaleStableWindow !== undefined ? { stableWindowMs: opts.autoscaleStableWindow } : {}),
    ...(opts.autoscalePanicWindow !== undefined ? { panicWindowMs: opts.autoscalePanicWindow } : {}),
    ...(opts.autoscaleScaleDownDelay !== undefined ? { scaleDownDelayMs: opts.autoscaleScaleDownDelay } : {}),
  };
  return { ...(opts.autoscaleTick !== undefined ? { tickMs: opts.autoscaleTick } : {}), ...(Object.keys(autoscaler).length ? { autoscaler } : {}) };
}

/** The `up` command: start, print how to use it, wait for Ctrl-C / SIGTERM, stop, exit 0. */
export async function upCommand(
  opts: UpCommandOptions,
  io: Io,
): Promise<void> {
  const devices = await devicesOption(opts.devices);
  logger('up').info({ kind: devices.kind, count: devices.count }, devices.reason);
  const cs = await startCornserve({
    drainTimeoutMs: opts.drainTimeout,
    blockedLimitMs: opts.blockedLimit,
    port: Number(opts.port),
    host: opts.host,
    devices: devices.count,
    deviceKind: devices.kind,
    childEnv: {
      ...(opts.allowCpuFallback ? { [EXECUTOR_ENV.allowCpuFallback]: '1' } : {}),
      ...(opts.executionProvider ? { [EXECUTION_PROVIDER_ENV]: opts.executionProvider } : {}),
      ...(opts.models ? { [MODELS_ENV]: modelDirs(opts.models.split(delimiter)).join(delimiter) } : {}),
    },
    ...(opts.redis ? { redisUrl: opts.redis } : {}),
    ...(opts.adminToken ? { adminToken: opts.adminToken } : {}),
    bodyLimitBytes: Number(opts.bodyLimit),
    dispatch: opts.dispatch,
    functionHop: opts.functionHop,
    autoscale: upAutoscaleOptions(opts),
  });
  printBanner(cs, io);
  const recovered = cs.apps.entries();
  for (const entry of recovered) printAppUsage(cs.gatewayUrl, entry, io);
  const stopped = waitForStop(cs, io, opts.drainTimeout);
  // Not awaited: a Ctrl-C during the registrations stops `up` without waiting for them.
  if (opts.apps) {
    void registerAppsDir(cs.apps, opts.apps, (file, e) => {
      const name = relative(process.cwd(), file);
      if (e.type === 'initial') io.err(`registering ${name}: deploying ${e.task_names.join(', ') || 'no unit tasks'} ...`);
      else if (e.type === 'progress') io.err(`  ${name}: ${e.task} ${e.state}`);
      else if (e.type === 'final') printAppUsage(cs.gatewayUrl, cs.apps.resolve(e.app_id), io);
      else if (recovered.some((r) => e.message.includes(`"${r.name}" is already used`))) io.err(`${name}: already registered (recovered from the store)`);
      else io.err(`registering ${name} failed: ${e.message}`);
    }).catch((err) => io.err(`registering the apps in ${opts.apps} failed: ${(err as Error).message}`));
  }
  await stopped;
  io.err('cornserve stopped');
  process.exit(0);
}

/** Resolves once Ctrl-C / SIGTERM has stopped everything; a second signal exits at once. */
function waitForStop(cs: Cornserve, io: Io, drainTimeoutMs: number): Promise<void> {
  return new Promise<void>((resolveStop) => {
    let signals = 0;
    const onSignal = (signal: string) => {
      if (++signals > 1) {
        io.err('forced exit');
        process.exit(1);
      }
      const inFlight = cs.apps.inFlight();
      io.err(`\n${signal}: stopping every process${inFlight ? ` after the ${inFlight} request(s) in flight finish (at most ${drainTimeoutMs} ms; ${signal === 'SIGINT' ? 'Ctrl-C again' : 'a second signal'} stops at once)` : ''} ...`);
      void cs.stop().then(resolveStop);
    };
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  });
}
