/**
 * ResourceManagerClient: the resource manager's HTTP API (server.ts) seen as a ResourceManagerApi plus the
 * app-function part of the Platform, so the gateway runs unchanged against an in-process ResourceManager or
 * a resource-manager process (`cornserve resource-manager`).
 *
 * Errors keep their code and status across the wire (thrown as CornserveError). onEvent() keeps one
 * GET /events stream open (reconnecting); when it reconnects to another resource-manager instance (a
 * restart), every app function deployed through this client is reported as exited (expected: false), so
 * AppFunctions restarts it there.
 */
import type { AutoscalePolicy } from '../../lib/autoscale.js';
import { CornserveError, ndjsonLines, type UnitTask } from '../../functions/sdk/index.js';
import { logger } from '../../lib/log.js';
import { sleep } from '../../lib/wait.js';
import type { AppFunctionInstance, AppFunctionPlatform, AppFunctionSpec, PlatformEvent } from '../../lib/platform.js';
import type { Unsubscribe } from '../../lib/store.js';
import { ResourceManagerUnreachableError } from '../../lib/resource-errors.js';
import { newTaskRecord } from './task-records.js';
import type { DeployProgress, PlanTarget, ResourceManagerApi, TaskStatus } from './types.js';
import type { ProfileRunResult } from '../taskmanager/profiler-run.js';
import type { TaskProfile } from '../../lib/autoscale.js';

const log = logger('resource-client');

interface ErrorLine { error: { code: string; message: string; details?: unknown }; status?: number }

export interface ResourceManagerClientOptions {
  /** Bound on each plain request (deploy and app-function deployment are bounded by the server). @default 60 s */
  timeoutMs?: number;
  /** Pause before reconnecting the event stream. @default 500 ms */
  reconnectMs?: number;
}

export class ResourceManagerClient implements ResourceManagerApi, AppFunctionPlatform {
  readonly url: string;
  readonly #listeners = new Set<(e: PlatformEvent) => void>();
  readonly #deployed = new Set<string>();
  #events: AbortController | undefined;
  #instance: string | undefined;

  constructor(url: string, private readonly opts: ResourceManagerClientOptions = {}) {
    this.url = url.replace(/\/+$/, '');
  }

  async deploy(tasks: UnitTask[], onProgress?: (p: DeployProgress) => void): Promise<string[]> {
    const res = await this.#fetch('/tasks/deploy', { method: 'POST', body: { tasks: tasks.map(newTaskRecord) }, stream: true });
    for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
      const msg = JSON.parse(line) as { progress?: DeployProgress; taskIds?: string[] } & Partial<ErrorLine>;
      if (msg.progress) onProgress?.(msg.progress);
      else if (msg.taskIds) return msg.taskIds;
      else if (msg.error) throw remoteError(msg as ErrorLine);
    }
    throw new ResourceManagerUnreachableError(this.url, 'the deploy stream ended without a result');
  }

  async release(taskIds: string[]): Promise<void> {
    await this.#fetch('/tasks/release', { method: 'POST', body: { taskIds } });
  }

  async scale(taskId: string, deltaDevices: number): Promise<TaskStatus> {
    return (await this.#fetch('/tasks/scale', { method: 'POST', body: { taskId, delta: deltaDevices } }).then((r) => r.json())) as TaskStatus;
  }

  async profile(taskId: string): Promise<ProfileRunResult> {
    return (await this.#fetch('/tasks/profile', { method: 'POST', body: { taskId }, stream: true }).then((r) => r.json())) as ProfileRunResult;
  }

  async listProfiles(): Promise<TaskProfile[]> {
    return (await this.#fetch('/profiles').then((r) => r.json())) as TaskProfile[];
  }

  async setAutoscale(taskId: string, policy: AutoscalePolicy, source: 'admin' | 'app'): Promise<TaskStatus> {
    return (await this.#fetch('/tasks/autoscale', { method: 'POST', body: { taskId, policy, source } }).then((r) => r.json())) as TaskStatus;
  }

  async applyPlan(targets: PlanTarget[]): Promise<TaskStatus[]> {
    // Executors start within the health timeout each: the reply may take minutes (no client-side timeout).
    return (await this.#fetch('/plans/apply', { method: 'POST', body: { targets }, stream: true }).then((r) => r.json())) as TaskStatus[];
  }

  async listTasks(): Promise<TaskStatus[]> {
    return (await this.#fetch('/tasks').then((r) => r.json())) as TaskStatus[];
  }

  async deployAppFunction(spec: AppFunctionSpec): Promise<AppFunctionInstance> {
    this.#deployed.add(spec.appId);
    return (await this.#fetch('/app-functions', { method: 'POST', body: spec, stream: true }).then((r) => r.json())) as AppFunctionInstance;
  }

  async deleteAppFunction(appId: string): Promise<void> {
    this.#deployed.delete(appId);
    await this.#fetch(`/app-functions/${encodeURIComponent(appId)}`, { method: 'DELETE' });
  }

  /** GET /health: `{status, platform, instance}`. */
  async health(): Promise<{ status: string; platform: string; instance: string }> {
    return (await this.#fetch('/health').then((r) => r.json())) as { status: string; platform: string; instance: string };
  }

  onEvent(listener: (e: PlatformEvent) => void): Unsubscribe {
    this.#listeners.add(listener);
    if (!this.#events) {
      this.#events = new AbortController();
      void this.#follow(this.#events.signal);
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.close();
    };
  }

  /** Stops following events (nothing else holds resources). */
  close(): void {
    this.#events?.abort();
    this.#events = undefined;
  }

  async #follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const res = await fetch(`${this.url}/events`, { signal });
        if (!res.ok || !res.body) throw new Error(`GET /events: ${res.status}`);
        for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
          const msg = JSON.parse(line) as { instance?: string; event?: PlatformEvent };
          if (msg.instance) this.#onInstance(msg.instance);
          if (msg.event) this.#emit(msg.event);
        }
      } catch (err) {
        if (!signal.aborted) log.debug({ err: (err as Error).message }, 'event stream broke; reconnecting');
      }
      await sleep(this.opts.reconnectMs ?? 500);
    }
  }

  #onInstance(instance: string): void {
    const previous = this.#instance;
    this.#instance = instance;
    if (previous === undefined || previous === instance) return;
    log.warn({ url: this.url }, 'the resource manager restarted; its app functions are restarted there');
    for (const appId of this.#deployed) this.#emit({ kind: 'app-function-exited', appId, code: null, signal: null, expected: false, logTail: ['the resource manager restarted'] });
  }

  #emit(e: PlatformEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch (err) {
        log.warn({ err }, 'event listener threw');
      }
    }
  }

  async #fetch(path: string, init: { method?: string; body?: unknown; stream?: boolean } = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method: init.method ?? 'GET',
        ...(init.body !== undefined ? { body: JSON.stringify(init.body), headers: { 'content-type': 'application/json' } } : {}),
        ...(init.stream ? {} : { signal: AbortSignal.timeout(this.opts.timeoutMs ?? 60_000) }),
      });
    } catch (e) {
      throw new ResourceManagerUnreachableError(this.url, (e as Error).cause ? String((e as Error & { cause: Error }).cause.message) : (e as Error).message);
    }
    if (res.ok) return res;
    const text = await res.text();
    try {
      throw remoteError({ ...(JSON.parse(text) as ErrorLine), status: res.status });
    } catch (e) {
      if (e instanceof CornserveError) throw e;
      throw new ResourceManagerUnreachableError(this.url, `${init.method ?? 'GET'} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
    }
  }
}

function remoteError(line: ErrorLine): CornserveError {
  return new CornserveError(line.error.code, line.error.message, line.status ?? 500, line.error.details);
}
