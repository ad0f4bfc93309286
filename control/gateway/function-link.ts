/**
 * The gateway side of the function link (lib/function-link.ts): one framed connection per app function, dialled on
 * the first invocation (an HTTP Upgrade on the function's own address) and kept until it closes (the function
 * stopped or crashed: the next invocation dials again).
 *
 * A call on the link behaves like the node:http request forward()/openUpstream() (proxy.ts) otherwise make, so
 * they serve both hops with one code path: LinkCall emits 'response' with a Readable reply (statusCode, headers)
 * or 'error' (the link closed before the reply: a connection failure, for onFailure), and destroy() cancels the
 * request on the function. A reply that came whole in its head frame (the common JSON reply) is emitted as
 * 'whole' with its bytes (a WholeReply): no Readable, nothing to pipe. A streamed reply the gateway reads slower
 * than it arrives pauses that request on the function (per request: the connection keeps flowing for the others).
 */
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { FrameReader, writeFrame } from '../../lib/frames.js';
import { LINK_PATH, LINK_PROTOCOL, type ToFunction, type ToGateway } from '../../lib/function-link.js';
import type { Logger } from '../../lib/log.js';
import { httpRequest } from '../../lib/unix-url.js';
import type { WholeReply } from './proxy.js';

/** How long a dial may take before the invocation goes over HTTP instead (a local socket answers in milliseconds). */
const DIAL_TIMEOUT_MS = 2_000;

/** What a call needs (proxy.ts's UpstreamOptions has these). */
export interface LinkCallOptions {
  deadline: number;
  /** Trace context fields (traceparent, …), as the HTTP hop's headers carry them. */
  trace: Record<string, string>;
}

/** The links of this gateway, by app-function URL. */
export class FunctionLinks {
  readonly #open = new Map<string, FunctionLink>();
  readonly #dialling = new Map<string, Promise<FunctionLink | undefined>>();
  /** Functions that answered the upgrade with something else than 101: they are called over HTTP. */
  readonly #httpOnly = new Set<string>();
  #closed = false;

  constructor(private readonly log: Logger) {}

  /**
   * The link to the function at `url` (dialled now if there is none); undefined means "use HTTP": the function
   * does not speak the link, or could not be reached now (then the HTTP call fails the way a crash is reported).
   */
  get(url: string): FunctionLink | undefined | Promise<FunctionLink | undefined> {
    const open = this.#open.get(url);
    if (open) return open;
    if (this.#httpOnly.has(url) || this.#closed) return undefined;
    let dial = this.#dialling.get(url);
    if (!dial) {
      dial = this.#dial(url).finally(() => this.#dialling.delete(url));
      this.#dialling.set(url, dial);
    }
    return dial;
  }

  /** Closes every link (the gateway stops; calls still on them fail like a dropped connection). */
  close(): void {
    this.#closed = true;
    for (const link of this.#open.values()) link.close();
    this.#open.clear();
  }

  #dial(url: string): Promise<FunctionLink | undefined> {
    return new Promise((resolve) => {
      const req = httpRequest(`${url}${LINK_PATH}`, {
        method: 'GET',
        agent: false,
        timeout: DIAL_TIMEOUT_MS,
        headers: { connection: 'Upgrade', upgrade: LINK_PROTOCOL },
      });
      req.once('upgrade', (_res, socket: Socket, head: Buffer) => {
        if (this.#closed) {
          socket.destroy();
          return resolve(undefined);
        }
        const link = new FunctionLink(socket, head, this.log, () => {
          if (this.#open.get(url) === link) this.#open.delete(url);
        });
        this.#open.set(url, link);
        resolve(link);
      });
      req.once('response', (res) => {
        res.resume();
        // Any answer but 101 below 500: it does not speak the link (an older runtime, another server; a plain node:http
        // server answers the GET itself). A 5xx (a function shutting down) may pass.
        const status = res.statusCode ?? 0;
        if (status < 500) {
          this.log.info({ url, status }, 'the app function does not take the function link: calling it over HTTP');
          this.#httpOnly.add(url);
        }
        resolve(undefined);
      });
      req.once('timeout', () => req.destroy(new Error(`no answer to the link upgrade within ${DIAL_TIMEOUT_MS} ms`)));
      req.once('error', (err) => {
        this.log.debug({ err, url }, 'dialling the function link failed: this call goes over HTTP');
        resolve(undefined);
      });
      req.end();
    });
  }
}

/** One function's link: calls multiplexed by id. */
export class FunctionLink {
  #nextId = 1;
  readonly #calls = new Map<number, LinkCall>();

  constructor(private readonly sock: Socket, head: Buffer, log: Logger, onClose: () => void) {
    if (head.length > 0) sock.unshift(head);
    new FrameReader<ToGateway>(sock, {
      target: () => undefined,
      frame: (h, payload) => this.#calls.get(h.id)?.frame(h, payload),
      error: (err) => log.warn({ err }, 'malformed frame on the function link: closing it'),
    });
    sock.on('error', () => {}); // 'close' follows
    sock.on('close', () => {
      onClose();
      const calls = [...this.#calls.values()];
      this.#calls.clear();
      for (const call of calls) call.linkClosed();
    });
  }

  get closed(): boolean {
    return this.sock.destroyed;
  }

  /** A new call (sent by its end(body)). */
  call(opts: LinkCallOptions): LinkCall {
    return new LinkCall(this, this.#nextId++, opts);
  }

  close(): void {
    this.sock.destroy();
  }

  /** @internal */
  send(header: ToFunction, payload?: Buffer): void {
    if (!this.sock.destroyed) writeFrame(this.sock, header, payload);
  }

  /** @internal */
  open(id: number, call: LinkCall): void {
    this.#calls.set(id, call);
  }

  /** @internal */
  done(id: number): void {
    this.#calls.delete(id);
  }
}

/** A reply on the link, read like an IncomingMessage (statusCode, headers, body stream). */
export class LinkReply extends Readable {
  #paused = false;
  /** The whole body came (IncomingMessage's `complete`). */
  complete = false;

  constructor(private readonly call: LinkCall, readonly statusCode: number, readonly headers: Record<string, string>) {
    super();
  }

  /** @internal Adds body bytes; asks the function to pause this request when the reader is behind. */
  add(chunk: Buffer): void {
    if (!this.push(chunk) && !this.#paused) {
      this.#paused = true;
      this.call.flow('pause');
    }
  }

  override _read(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.call.flow('resume');
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.call.destroy(err ?? undefined); // the reader gave up: the function stops working on it
    callback(err);
  }
}

/**
 * One invocation on a link, with the part of ClientRequest's interface proxy.ts uses. Not an EventEmitter: a call
 * has two events and one or two listeners each, and an emitter per invocation was a measurable share of the
 * gateway's CPU (its construction, emit's generic dispatch).
 */
export class LinkCall {
  /** The streamed reply, once its head came (a whole reply needs no keeping: the call is over with it). */
  #reply: LinkReply | undefined;
  #over = false;
  readonly #onResponse: Array<(reply: LinkReply) => void> = [];
  readonly #onWhole: Array<(reply: WholeReply) => void> = [];
  readonly #onError: Array<(err: Error) => void> = [];

  constructor(private readonly link: FunctionLink, private readonly id: number, private readonly opts: LinkCallOptions) {}

  on(event: 'response', listener: (reply: LinkReply) => void): this;
  on(event: 'whole', listener: (reply: WholeReply) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'response' | 'whole' | 'error', listener: ((reply: LinkReply) => void) | ((reply: WholeReply) => void) | ((err: Error) => void)): this {
    if (event === 'response') this.#onResponse.push(listener as (reply: LinkReply) => void);
    else if (event === 'whole') this.#onWhole.push(listener as (reply: WholeReply) => void);
    else this.#onError.push(listener as (err: Error) => void);
    return this;
  }

  /** Sends the invocation with its body. */
  end(body: string | Buffer): void {
    if (this.link.closed) return void process.nextTick(() => this.linkClosed());
    this.link.open(this.id, this);
    const header: Extract<ToFunction, { t: 'invoke' }> = { t: 'invoke', id: this.id, deadline: this.opts.deadline };
    if (Object.keys(this.opts.trace).length > 0) header.trace = this.opts.trace;
    this.link.send(header, Buffer.isBuffer(body) ? body : Buffer.from(body));
  }

  /** Cancels the call: the function is told (its serve() sees the abort), the reply (if any) is destroyed with `err`. */
  destroy(err?: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.link.done(this.id);
    this.link.send({ t: 'cancel', id: this.id, reason: err?.message ?? 'the client disconnected' });
    this.#fail(err ?? new Error('the request was cancelled'));
  }

  /** @internal */
  frame(h: ToGateway, payload: Buffer | null): void {
    if (this.#over) return;
    switch (h.t) {
      case 'head': {
        if (h.end) {
          // The whole reply: handed over as it is (its length is the content-length the HTTP hop would send).
          this.#over = true;
          this.link.done(this.id);
          const whole: WholeReply = { statusCode: h.status, headers: h.headers, body: payload ?? Buffer.alloc(0) };
          for (const listener of this.#onWhole) listener(whole);
          return;
        }
        const reply = new LinkReply(this, h.status, h.headers);
        this.#reply = reply;
        if (payload && payload.length > 0) reply.add(payload);
        for (const listener of this.#onResponse) listener(reply);
        return;
      }
      case 'data':
        if (payload && payload.length > 0) this.#reply?.add(payload);
        return;
      case 'end':
        return this.#end();
      case 'error':
        this.#over = true;
        this.link.done(this.id);
        return this.#fail(new Error(this.#reply ? 'the upstream connection closed mid-reply' : h.message));
    }
  }

  /** @internal The link closed under this call: a dropped connection (before the reply) or a cut reply. */
  linkClosed(): void {
    if (this.#over) return;
    this.#over = true;
    this.#fail(new Error(this.#reply ? 'the upstream connection closed mid-reply' : 'the connection to the app function closed'));
  }

  /** @internal Per-request back-pressure from the reply. */
  flow(t: 'pause' | 'resume'): void {
    if (!this.#over) this.link.send({ t, id: this.id });
  }

  #end(): void {
    this.#over = true;
    this.link.done(this.id);
    this.#reply!.complete = true;
    this.#reply!.push(null);
  }

  /** Like a failed ClientRequest: the reply is destroyed (with `err` when someone listens) and 'error' comes next tick. */
  #fail(err: Error): void {
    const reply = this.#reply;
    if (reply && !reply.destroyed) reply.destroy(reply.listenerCount('error') > 0 ? err : undefined);
    process.nextTick(() => {
      for (const listener of this.#onError) listener(err);
    });
  }
}
