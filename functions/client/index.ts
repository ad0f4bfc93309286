/**
 * CornserveClient: use a running Cornserve from a script or a notebook, the way the reference's client does.
 *
 *   const client = await CornserveClient.connect('http://127.0.0.1:8000');
 *   const echo = new EchoTask({});
 *   await client.declare([echo]);            // deployed (or shared) while the session lives
 *   const out = await echo.call({ text: 'hi' }); // record and replay, dispatched through POST /tasks/invoke
 *   await client.close();                    // the session's tasks are released
 *
 * It opens WS /session, sends a heartbeat every 5 s, and installs a GatewayDispatcher so `task.call()` goes
 * through the gateway. Frames follow the reference's wire format (control/gateway/routes/session.ts).
 * Like the SDK it imports nothing from control/, executors/ or sidecar/.
 */
import WebSocket from 'ws';
import { CornserveError, GatewayDispatcher, discoverUnitTasks, setDefaultDispatcher, type Task, type UnitTask } from '../sdk/index.js';

export const HEARTBEAT_MS = 5_000;

export interface SessionReply {
  status: number;
  content: string;
}

/** A session frame the gateway refused (status 400, 404, 500). */
export class SessionError extends CornserveError {
  constructor(verb: string, reply: SessionReply) {
    super('SESSION_REQUEST_FAILED', `${verb}: ${reply.content}`, reply.status, reply);
  }
}

export interface ConnectOptions {
  /** @default 5 s, as the reference */
  heartbeatMs?: number;
  /** How long connecting and each reply may take. @default 5 min (declaring may deploy executors) */
  timeoutMs?: number;
  /** Install this client's dispatcher as the process default (task.call() without options). @default true */
  installDispatcher?: boolean;
}

/** http(s)://, ws(s):// or bare host:port -> the gateway's http base URL. */
export function gatewayHttpUrl(url: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(url) ? url : `http://${url}`;
  const u = new URL(withScheme);
  if (u.protocol === 'ws:') u.protocol = 'http:';
  if (u.protocol === 'wss:') u.protocol = 'https:';
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported gateway URL ${url} (http, https, ws, wss or host:port)`);
  return u.origin;
}

/** The UnitTaskList wire form (`{"_task_list": [{class_name, task}]}`) of every unit task under `tasks`. */
export function unitTaskList(tasks: Iterable<Task>): { _task_list: Array<{ class_name: string; task: unknown }> } {
  return { _task_list: discoverUnitTasks(tasks).map((t: UnitTask) => ({ class_name: t.constructor.name, task: t.toJSON() })) };
}

export class CornserveClient {
  readonly dispatcher: GatewayDispatcher;
  readonly #sock: WebSocket;
  readonly #pending: Array<{ verb: string; resolve: (r: SessionReply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
  readonly #heartbeat: NodeJS.Timeout;
  readonly #timeoutMs: number;
  readonly #installed: boolean;
  #closed = false;
  #failure: Error | undefined;

  private constructor(readonly url: string, sock: WebSocket, opts: ConnectOptions) {
    this.#sock = sock;
    this.#timeoutMs = opts.timeoutMs ?? 5 * 60_000;
    this.dispatcher = new GatewayDispatcher(url);
    this.#installed = opts.installDispatcher ?? true;
    if (this.#installed) setDefaultDispatcher(this.dispatcher);
    sock.on('message', (data) => this.#onReply(data.toString()));
    sock.on('close', (code, reason) => this.#fail(new Error(`the session socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`)));
    sock.on('error', (err) => this.#fail(err));
    this.#heartbeat = setInterval(() => void this.heartbeat().catch(() => {}), opts.heartbeatMs ?? HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  static async connect(url: string, opts: ConnectOptions = {}): Promise<CornserveClient> {
    const http = gatewayHttpUrl(url);
    const wsUrl = `${http.replace(/^http/, 'ws')}/session`;
    const sock = new WebSocket(wsUrl, { handshakeTimeout: opts.timeoutMs ?? 30_000 });
    await new Promise<void>((resolve, reject) => {
      sock.once('open', () => resolve());
      sock.once('error', (err) => reject(new Error(`cannot open a session at ${wsUrl}: ${err.message}`)));
    });
    return new CornserveClient(http, sock, opts);
  }

  /** Declares every unit task under `tasks` used (composites are walked): deployed if needed, kept while the session lives. */
  async declare(tasks: Iterable<Task>): Promise<void> {
    await this.#request('declare_used', unitTaskList(tasks));
  }

  /** Gives the tasks back (torn down when nothing else uses them). */
  async release(tasks: Iterable<Task>): Promise<void> {
    await this.#request('declare_not_used', unitTaskList(tasks));
  }

  async heartbeat(): Promise<void> {
    await this.#request('heartbeat', null);
  }

  /** Ends the session (the gateway releases its tasks) and restores the default dispatcher. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (this.#installed) setDefaultDispatcher(undefined);
    if (this.#sock.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      this.#sock.once('close', () => resolve());
      this.#sock.close(1000, 'client closed');
    });
  }

  #request(verb: string, taskList: unknown): Promise<SessionReply> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error('the client is closed'));
    return new Promise<SessionReply>((resolve, reject) => {
      const timer = setTimeout(() => this.#fail(new Error(`no reply to ${verb} within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      this.#pending.push({ verb, resolve, reject, timer });
      this.#sock.send(JSON.stringify({ verb, task_list: taskList }));
    }).then((reply) => {
      if (reply.status !== 200) throw new SessionError(verb, reply);
      return reply;
    });
  }

  #onReply(text: string): void {
    const next = this.#pending.shift();
    if (!next) return;
    clearTimeout(next.timer);
    try {
      next.resolve(JSON.parse(text) as SessionReply);
    } catch (e) {
      next.reject(new Error(`bad session reply: ${(e as Error).message}`));
    }
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    clearInterval(this.#heartbeat);
    for (const p of this.#pending.splice(0)) {
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}
