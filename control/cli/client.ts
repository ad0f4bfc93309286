/**
 * GatewayClient: the CLI's (and tests') typed access to the gateway's HTTP API.
 * Errors come back as GatewayRequestError carrying the gateway's `{error: {code, message}}`.
 */
import { ndjsonLines } from '../../functions/sdk/index.js';
import { CliError } from './errors.js';

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

export class GatewayClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  #headers(admin: boolean, extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json', ...extra };
    if (admin && this.token) h.authorization = `Bearer ${this.token}`;
    return h;
  }

  async #fetch(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.baseUrl), init);
    } catch (e) {
      throw new CliError(`cannot reach the gateway at ${this.baseUrl} (${(e as Error).cause ?? (e as Error).message}); is \`cornserve up\` running? (set CORNSERVE_GATEWAY_URL)`);
    }
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

  /** Registers an app; `onEvent` sees each SSE event; resolves with the final (or error) event. */
  async register(source: string, opts: { alias?: string; name?: string }, onEvent: (e: RegistrationEvent) => void = () => {}): Promise<RegistrationEvent> {
    const res = await this.#fetch('/app/register', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ source, ...opts }) });
    let last: RegistrationEvent | undefined;
    for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
      if (!line.startsWith('data:')) continue;
      const { event } = JSON.parse(line.slice(5)) as { event: RegistrationEvent };
      onEvent(event);
      last = event;
    }
    if (!last || (last.type !== 'final' && last.type !== 'error')) throw new CliError('the registration stream ended before its final event');
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
    return this.#fetch(`/app/invoke/${encodeURIComponent(app)}${q}`, { method: 'POST', headers: this.#headers(false), body: JSON.stringify({ request_data: requestData }) });
  }

  tasks(): Promise<TaskInfo[]> {
    return this.#json('/tasks/list', { headers: this.#headers(false) });
  }

  scale(taskId: string, numDevices: number): Promise<TaskInfo> {
    return this.#json('/task/scale', { method: 'POST', headers: this.#headers(true), body: JSON.stringify({ task_id: taskId, num_devices: numDevices }) });
  }
}

export interface TaskInfo {
  task_id: string;
  name: string;
  task_class: string;
  state: string;
  usage: number;
  devices: Array<{ node: string; globalRank: number }>;
  executors: Array<{ executor_id: string; url: string; state: string; outstanding: number }>;
}
