/**
 * The local platform (the embedded default): executors and app functions are child processes of this one,
 * `node --import tsx <entry> ...args`, each on a free loopback port. Output is re-logged line by line with
 * the executor id / app name as prefix; exits are reported through onEvent; nothing outlives us
 * (exit-guard.ts in this process, orphan-guard.ts preloaded into every child).
 * Devices: `devices` per node, for every node name in `nodes`; virtual CPU devices unless `deviceKind` is 'cuda'
 * (`cornserve up --devices auto` found GPUs), when an executor's node-local ranks are its GPU ordinals
 * (CORNSERVE_DEVICE_KIND / CORNSERVE_DEVICE_ORDINALS).
 * With `socketDir`, app functions listen on a unix socket in that folder instead of a TCP port, and their
 * URL is `http+unix://...` (lib/unix-url.ts): the gateway -> function hop skips the TCP stack.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { EXECUTOR_ENV, type LaunchSpec } from '../../lib/descriptor.js';
import type { Unsubscribe } from '../../lib/store.js';
import { canListen, freePort } from '../../lib/net.js';
import { unixUrl } from '../../lib/unix-url.js';
import { logger } from '../../lib/log.js';
import { ManagedChild, stderrSink, type ExitInfo, type LogSink } from './child.js';
import { DuplicateIdError, EntryNotFoundError, PlatformShutDownError } from './errors.js';
import { guardChildren } from './exit-guard.js';
import type {
  AppFunctionInstance,
  AppFunctionSpec,
  ExecutorInstance,
  DeviceKind,
  ExecutorSpec,
  NodeDevices,
  Platform,
  PlatformEvent,
} from '../../lib/platform.js';

export interface LocalPlatformOptions {
  /** Launch entries are relative to this folder (the repository root). */
  repoRoot: string;
  /** Virtual devices per node. @default 4 */
  devices?: number;
  /** What the devices are (passed to executors as CORNSERVE_DEVICE_KIND). @default 'cpu' */
  deviceKind?: DeviceKind;
  /** Node names. @default ['local'] */
  nodes?: string[];
  /** Address children listen on (passed as HOST) and URLs use. @default '127.0.0.1' */
  host?: string;
  /** SIGTERM -> SIGKILL grace when a caller gives none. @default 5000 */
  stopGraceMs?: number;
  /** Extra environment for every child (e.g. OTEL_* or CORNSERVE_LOG_LEVEL). */
  env?: Record<string, string>;
  /** Passed to executors as CORNSERVE_STORE_URL (a redis URL), when the Store is shared. */
  storeUrl?: string;
  /** Each node's sidecar URL, passed to its executors as CORNSERVE_SIDECAR_URL (see also setSidecarUrl). */
  sidecarUrls?: Record<string, string>;
  /** Where child output lines go. @default prefixed lines on our stderr */
  logSink?: LogSink;
  /**
   * A folder (the caller's, removed by the caller) for app functions' unix sockets: each function listens on
   * `<socketDir>/fn-<n>.sock` (CORNSERVE_SOCKET_PATH) and its URL is http+unix. @default TCP ports
   */
  socketDir?: string;
}

/** What runs, for `cornserve up` status output and tests. */
export interface LocalProcessInfo {
  kind: 'executor' | 'app-function';
  id: string;
  pid: number;
  url: string;
}

interface Running {
  info: LocalProcessInfo;
  child: ManagedChild;
}

const ORPHAN_GUARD = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'orphan-guard.ts')).href;

export class LocalPlatform implements Platform {
  readonly kind = 'local' as const;
  private readonly log = logger('platform');
  private readonly executors = new Map<string, Running>();
  private readonly functions = new Map<string, Running>();
  private readonly listeners = new Set<(e: PlatformEvent) => void>();
  private readonly sidecarUrls: Map<string, string>;
  private readonly host: string;
  private readonly nodes: string[];
  private readonly devices: number;
  private readonly stopGraceMs: number;
  private unguard: (() => void) | undefined;
  private shutdownPromise: Promise<void> | undefined;
  /** Numbers socket files: every launch gets a fresh one. */
  private sockets = 0;

  constructor(private readonly opts: LocalPlatformOptions) {
    this.host = opts.host ?? '127.0.0.1';
    this.nodes = opts.nodes ?? ['local'];
    this.devices = opts.devices ?? 4;
    this.stopGraceMs = opts.stopGraceMs ?? 5_000;
    if (!Number.isInteger(this.devices) || this.devices < 0) throw new RangeError(`devices must be a non-negative integer, got ${this.devices}`);
    if (this.nodes.length === 0 || new Set(this.nodes).size !== this.nodes.length) throw new RangeError(`nodes must be distinct names, got ${this.nodes.join(', ')}`);
    this.sidecarUrls = new Map(Object.entries(opts.sidecarUrls ?? {}));
  }

  async listNodes(): Promise<NodeDevices[]> {
    return this.nodes.map((node) => ({ node, devices: this.devices, deviceKind: this.opts.deviceKind ?? 'cpu' }));
  }

  /** Sets (or clears) the sidecar URL later executors on `node` receive. */
  setSidecarUrl(node: string, url: string | undefined): void {
    if (url === undefined) this.sidecarUrls.delete(node);
    else this.sidecarUrls.set(node, url);
  }

  async startExecutor(spec: ExecutorSpec): Promise<ExecutorInstance> {
    if (this.executors.has(spec.executorId)) throw new DuplicateIdError('executor', spec.executorId);
    const sidecar = this.sidecarUrls.get(spec.node);
    const env: Record<string, string> = {
      ...spec.env,
      [EXECUTOR_ENV.executorId]: spec.executorId,
      [EXECUTOR_ENV.taskId]: spec.taskId,
      [EXECUTOR_ENV.ranks]: spec.devices.map((d) => d.globalRank).join(','),
      [EXECUTOR_ENV.node]: spec.node,
      [EXECUTOR_ENV.deviceKind]: this.opts.deviceKind ?? 'cpu',
      [EXECUTOR_ENV.deviceOrdinals]: spec.devices.map((d) => d.localRank).join(','),
      ...(sidecar ? { [EXECUTOR_ENV.sidecar]: sidecar } : {}),
      ...(this.opts.storeUrl ? { [EXECUTOR_ENV.store]: this.opts.storeUrl } : {}),
    };
    const running = await this.launch('executor', spec.executorId, spec.launch, env, this.executors, spec.executorId, spec.port);
    void running.child.exited.then((exit) => {
      if (this.executors.get(spec.executorId) === running) this.executors.delete(spec.executorId);
      this.emit({ kind: 'executor-exited', executorId: spec.executorId, taskId: spec.taskId, ...exitFields(exit) });
    });
    return { executorId: spec.executorId, taskId: spec.taskId, url: running.info.url, node: spec.node, devices: spec.devices };
  }

  async stopExecutor(executorId: string, options: { graceMs?: number } = {}): Promise<void> {
    await this.executors.get(executorId)?.child.stop(options.graceMs ?? this.stopGraceMs);
  }

  /** Starts `spec.launch.entry` with `spec.env` (plus PORT or CORNSERVE_SOCKET_PATH, CORNSERVE_APP_ID, CORNSERVE_APP_NAME); replaces a running one. */
  async deployAppFunction(spec: AppFunctionSpec): Promise<AppFunctionInstance> {
    await this.deleteAppFunction(spec.appId);
    const env = { ...spec.env, CORNSERVE_APP_ID: spec.appId, CORNSERVE_APP_NAME: spec.name };
    const running = await this.launch('app-function', spec.appId, spec.launch, env, this.functions, spec.name);
    void running.child.exited.then((exit) => {
      if (this.functions.get(spec.appId) === running) this.functions.delete(spec.appId);
      this.emit({ kind: 'app-function-exited', appId: spec.appId, ...exitFields(exit) });
    });
    return { appId: spec.appId, url: running.info.url };
  }

  async deleteAppFunction(appId: string, options: { graceMs?: number } = {}): Promise<void> {
    await this.functions.get(appId)?.child.stop(options.graceMs ?? this.stopGraceMs);
  }

  onEvent(listener: (e: PlatformEvent) => void): Unsubscribe {
    const own = (e: PlatformEvent) => listener(e);
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }

  /** Every process still running. */
  processes(): LocalProcessInfo[] {
    return [...this.executors.values(), ...this.functions.values()].map((r) => ({ ...r.info }));
  }

  shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      const all = [...this.executors.values(), ...this.functions.values()];
      await Promise.allSettled(all.map((r) => r.child.stop(this.stopGraceMs)));
      this.releaseGuard();
    })();
    return this.shutdownPromise;
  }

  private async launch(
    kind: LocalProcessInfo['kind'],
    id: string,
    launch: LaunchSpec,
    extraEnv: Record<string, string>,
    into: Map<string, Running>,
    label = id,
    preferredPort?: number,
  ): Promise<Running> {
    if (this.shutdownPromise) throw new PlatformShutDownError();
    const entry = resolve(this.opts.repoRoot, launch.entry);
    if (!existsSync(entry)) throw new EntryNotFoundError(launch.entry, entry);
    const socketPath = kind === 'app-function' && this.opts.socketDir ? join(this.opts.socketDir, `fn-${++this.sockets}.sock`) : undefined;
    const port = socketPath ? undefined : preferredPort !== undefined && (await canListen(this.host, preferredPort)) ? preferredPort : await freePort(this.host);
    if (into.has(id)) throw new DuplicateIdError(kind === 'executor' ? 'executor' : 'app function', id);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...this.opts.env,
      ...launch.env,
      ...extraEnv,
      ...(socketPath ? { CORNSERVE_SOCKET_PATH: socketPath } : { [EXECUTOR_ENV.port]: String(port), CORNSERVE_SOCKET_PATH: '' }),
      HOST: this.host,
      CORNSERVE_PARENT_PID: String(process.pid),
    };
    const child = await ManagedChild.spawn({
      name: label,
      command: process.execPath,
      args: ['--import', 'tsx', '--import', ORPHAN_GUARD, entry, ...launch.args],
      cwd: this.opts.repoRoot,
      env,
      sink: this.opts.logSink ?? stderrSink,
    });
    const url = socketPath ? unixUrl(socketPath) : `http://${urlHost(this.host)}:${port}`;
    const running: Running = { info: { kind, id, pid: child.pid, url }, child };
    into.set(id, running);
    this.unguard ??= guardChildren({ killAll: () => this.killAll(), shutdown: () => this.shutdown() });
    this.log.debug({ kind, id, pid: child.pid, url }, 'started');
    return running;
  }

  private killAll(): void {
    for (const r of [...this.executors.values(), ...this.functions.values()]) r.child.kill();
  }

  private releaseGuard(): void {
    this.unguard?.();
    this.unguard = undefined;
  }

  private emit(e: PlatformEvent): void {
    if (!e.expected) this.log.warn({ ...e, logTail: undefined }, 'process exited unexpectedly');
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error({ err }, 'platform event listener threw');
      }
    }
  }
}

const exitFields = (exit: ExitInfo) => ({ code: exit.code, signal: exit.signal, expected: exit.expected, logTail: exit.logTail });

const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);
