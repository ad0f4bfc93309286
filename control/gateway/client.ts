/**
 * GatewayClient: the CLI's (and tests') typed access to the gateway's HTTP API.
 * Errors come back as CliErrors carrying the gateway's `{error: {code, message}}`.
 *
 * Every wait is bounded by `timeoutMs` (the CLI's --client-timeout-ms / $CORNSERVE_CLIENT_TIMEOUT_MS): the reply's
 * headers must come within it (an invocation: within its own deadline plus it), and then each further piece of
 * the body (a registration's SSE sends a keep-alive every 15 s; a stream's chunks). A gateway that accepts the
 * connection and never answers fails the command instead of hanging it.
 */
import { ndjsonLines } from '../../functions/sdk/index.js';
import { CliError } from '../../lib/cli-errors.js';

export interface RegistrationEvent {
  type: 'initial' | 'progress' | 'final' | 'error';
  [key: string]: unknown;
}

export interface AppInfo {
  app_id: string;
  name: string;
  aliases: string[];
  state: string;
  task_ids: string[];
}

/** How long the CLI waits for the gateway's answer, and then between two pieces of it. */
export const DEFAULT_CLIENT_TIMEOUT_MS = 60_000;
/** An invocation's deadline when the caller gives none (the gateway's default). */
const DEFAULT_INVOKE_DEADLINE_MS = 5 * 60_000;

export class GatewayClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
    readonly timeoutMs: number = DEFAULT_CLIENT_TIMEOUT_MS,
  ) {}

  #silent(ms: number, what: string): CliError {
    return new CliError(`the gateway at ${this.baseUrl} ${what} within ${ms} ms; is it overloaded or stuck? (wait longer with --client-timeout-ms or CORNSERVE_CLIENT_TIMEOUT_MS)`);
  }

  #headers(admin: boolean, extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json', ...extra };
    if (admin && this.token) h.authorization = `Bearer ${this.token}`;
    return h;
  }

  /** The reply, its headers within `headersWithinMs` and each piece of its body within `timeoutMs`. */
  async #fetch(path: string, init: RequestInit, headersWithinMs = this.timeoutMs): Promise<Response> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(this.#silent(headersWithinMs, 'did not answer')), headersWithinMs);
    let raw: Response;
    try {
      raw = await fetch(new URL(path, this.baseUrl), { ...init, signal: abort.signal });
    } catch (e) {
      if (abort.signal.aborted) throw abort.signal.reason;
      throw new CliError(`cannot reach the gateway at ${this.baseUrl} (${(e as Error).cause ?? (e as Error).message}); is \`cornserve up\` running? (set CORNSERVE_GATEWAY_URL)`);
    } finally {
      clearTimeout(timer);
    }
    const body = raw.body ? idleBounded(raw.body, this.timeoutMs, () => this.#silent(this.timeoutMs, 'stopped sending its reply: nothing came')) : null;
    const res = new Response(body, { status: raw.status, statusText: raw.statusText, headers: raw.headers });
    if (!res.ok) {
      const text = await res.text();
      let message = text;
      let code = `HTTP_${res.status}`;
      try {
        ({ message, code } = (JSON.parse(text) as { error: { code: string; message: string } }).error);
      } catch {
        /* not an error body */
      }
      throw new CliError(`${code}: ${message}`, res.status);
    }
    return res;
  }

  async #json<T>(path: string, init: RequestInit): Promise<T> {
    return (await (await this.#fetch(path, init)).json()) as T;
  }

  /**
   * Registers an app; `onEvent` sees each SSE event; resolves with the final event, or the first error event.
   * Up-front failures (bad source or name, name taken) are an HTTP 4xx, thrown as a CliError.
   */
  async register(source: string, opts: { alias?: string; name?: string; file_name?: string }, onEvent: (e: RegistrationEvent) => void = () => {}): Promise<RegistrationEvent> {
    const res = await this.#fetch('/app/register', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ source, ...opts }) });
    let last: RegistrationEvent | undefined;
    let error: RegistrationEvent | undefined;
    for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
      if (!line.startsWith('data:')) continue;
      const { event } = JSON.parse(line.slice(5)) as { event: RegistrationEvent };
      onEvent(event);
      last = event;
      if (event.type === 'error') error ??= event;
    }
    if (error) return error; // any error event fails the registration, whatever follows it
    if (!last || last.type !== 'final') throw new CliError('the registration stream ended before its final event');
    return last;
  }

  unregister(app: string): Promise<{ app_id: string; name: string; message: string }> {
    return this.#json(`/app/unregister/${encodeURIComponent(app)}`, { method: 'POST', headers: this.#headers(true) });
  }

  /** `{app_id: state}` as the reference returns it. */
  list(): Promise<Record<string, string>> {
    return this.#json('/app/list', { headers: this.#headers(false) });
  }

  /** Names, aliases and tasks too. */
  listDetails(): Promise<AppInfo[]> {
    return this.#json('/app/list?details=1', { headers: this.#headers(false) });
  }

  /** The raw reply: JSON, or an NDJSON stream (content-type application/x-ndjson). */
  invoke(app: string, requestData: unknown, opts: { timeoutMs?: number } = {}): Promise<Response> {
    const q = opts.timeoutMs ? `?timeout_ms=${opts.timeoutMs}` : '';
    // A JSON reply comes whole at the end: its headers may take the invocation's whole deadline.
    const within = (opts.timeoutMs ?? DEFAULT_INVOKE_DEADLINE_MS) + this.timeoutMs;
    return this.#fetch(`/app/invoke/${encodeURIComponent(app)}${q}`, { method: 'POST', headers: this.#headers(false), body: JSON.stringify({ request_data: requestData }) }, within);
  }

  tasks(): Promise<TaskInfo[]> {
    return this.#json('/tasks/list', { headers: this.#headers(false) });
  }

  /** POST /task/profile: the reply comes once the sweep ends (seconds for echo; bounded at 10 minutes). */
  async profile(taskId: string): Promise<ProfileInfo & { task_id: string; executor_id: string; skipped: Array<{ devices_per_executor: number; reason: string }> }> {
    const res = await this.#fetch('/task/profile', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ task_id: taskId }) }, Math.max(this.timeoutMs, 10 * 60_000));
    return (await res.json()) as never;
  }

  /** POST /tasks/register: a user-defined unit task (docs/registry.md); the check takes a few seconds. */
  registerTask(source: string): Promise<{ name: string; class_name: string; created: boolean }> {
    return this.#json('/tasks/register', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ source }) });
  }

  unregisterTask(name: string): Promise<{ removed: string }> {
    return this.#json(`/tasks/register/${encodeURIComponent(name)}`, { method: 'DELETE', headers: this.#headers(true) });
  }

  scale(taskId: string, numDevices: number): Promise<TaskInfo> {
    return this.#json('/task/scale', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ task_id: taskId, num_devices: numDevices }) });
  }

  /** POST /plans/apply: the reply comes once every executor the plan adds is ready (bounded at 10 minutes). */
  async applyPlan(plan: unknown): Promise<{ tasks: TaskInfo[] }> {
    const res = await this.#fetch('/plans/apply', { method: 'POST', headers: this.#headers(true), body: JSON.stringify(plan) }, Math.max(this.timeoutMs, 10 * 60_000));
    return (await res.json()) as never;
  }

  autoscale(taskId: string, policy: { min: number; max: number; target?: number; slo_ms?: number }): Promise<TaskInfo> {
    return this.#json('/task/autoscale', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ task_id: taskId, ...policy }) });
  }
}

export interface ProfilePointInfo { devices_per_executor: number; concurrency: number; throughput_rps: number; p50_ms: number; p99_ms: number }

/** A task's profile as /tasks/list and POST /task/profile give it (control/gateway/routes/profiles.ts). */
export interface ProfileInfo {
  device_kind: string;
  measured_at: string;
  points: ProfilePointInfo[];
  frontier: ProfilePointInfo[];
  saturation: ProfilePointInfo | null;
}

export interface TaskInfo {
  task_id: string;
  name: string;
  task_class: string;
  /** The task's JSON: `{id, descriptor, config}`. */
  task?: unknown;
  /** Its stored profile (any app's equivalent task may have measured it), null when none. */
  profile?: ProfileInfo | null;
  state: string;
  usage: number;
  devices: Array<{ node: string; globalRank: number }>;
  /** `execution`: where the executor computes (its /health), null when it does not say. */
  executors: Array<{ executor_id: string; url: string; state: string; outstanding: number; execution?: { provider: string; device: string; cpuFallback: boolean } | null }>;
  /** Autoscaling (null when the platform runs with --no-autoscale). */
  desired?: number | null;
  demand?: number | null;
  /** Executor-side: requests waiting in the executors, fraction of time busy (null when they do not report). */
  queue_depth?: number | null;
  busy_fraction?: number | null;
  capacity?: { per_executor_rps: number; source: string } | null;
  autoscale?: { source: string; policy: { min: number; max: number; target?: number; slo_ms?: number } | null; cold_start_ms?: number; paused?: string } | null;
  last_decision?: { at: number; from: number; to: number; reason: string } | null;
  /** Nodes whose sidecar is down, where the task's executors are not routed to meanwhile. */
  sidecar_down?: string[];
}

/** `body` whose every read must deliver within `ms`, else it fails with `silent()` (and the connection is closed). */
function idleBounded(body: ReadableStream<Uint8Array>, ms: number, silent: () => Error): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(silent()), ms);
      });
      try {
        const r = await Promise.race([reader.read(), idle]);
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      } catch (e) {
        void reader.cancel(e).catch(() => {});
        controller.error(e);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
