/**
 * The function side of the function link (lib/function-link.ts): the app function's HTTP server upgrades
 * `GET /link` (Upgrade: cornserve-link) to a framed connection, and every `invoke` frame on it runs the same
 * invocation code as POST /invoke (server.ts), answering through a LinkReply instead of a node:http response.
 *
 * Back-pressure: a stream's write() reports "wait" while the gateway has paused that request (its client reads
 * slowly) or while the connection's own buffer is full; drained() resolves once both cleared.
 * The connection closing (the gateway stopped) abandons every request on it, as a disconnect does over HTTP.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { FrameReader, writeFrame } from '../../lib/frames.js';
import { LINK_PATH, LINK_PROTOCOL, SWITCHING, type ToFunction, type ToGateway } from '../../lib/function-link.js';
import type { Logger } from '../../lib/log.js';
import type { InvokeReply, Invoker } from './server.js';

export interface LinkAcceptor {
  /**
   * Stops taking links and closes the open ones once their requests finished (at shutdown: the HTTP server's
   * close() waits for every socket it accepted, upgraded ones included).
   */
  drain(): void;
}

/** Serves the function link on `server`'s upgrade requests; other upgrades are refused (400). */
export function acceptLinks(server: Server, invoke: Invoker, log: Logger): LinkAcceptor {
  const open = new Set<LinkConnection>();
  let draining = false;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (draining) return void socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== LINK_PATH || String(req.headers.upgrade ?? '').toLowerCase() !== LINK_PROTOCOL) {
      return void socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    }
    socket.write(SWITCHING);
    const conn = new LinkConnection(socket as Socket, head, invoke, log);
    open.add(conn);
    socket.once('close', () => open.delete(conn));
  });
  return {
    drain() {
      draining = true;
      for (const conn of open) conn.endWhenIdle();
    },
  };
}

class LinkConnection {
  readonly #replies = new Map<number, LinkReply>();

  constructor(readonly sock: Socket, head: Buffer, private readonly invoke: Invoker, log: Logger) {
    if (head.length > 0) sock.unshift(head); // frames sent right behind the upgrade request
    new FrameReader<ToFunction>(sock, {
      target: () => undefined,
      frame: (h, payload) => this.#frame(h, payload),
      error: (err) => log.warn({ err }, 'malformed frame on the function link: closing it'),
    });
    sock.on('drain', () => {
      for (const reply of this.#replies.values()) reply.maybeDrained();
    });
    sock.on('error', () => {}); // 'close' follows
    sock.on('close', () => {
      const left = [...this.#replies.values()];
      this.#replies.clear();
      for (const reply of left) reply.abandon();
    });
  }

  #ending = false;

  /** Ends the connection now if no request is in flight, else after the last one. */
  endWhenIdle(): void {
    this.#ending = true;
    if (this.#replies.size === 0) this.sock.end();
  }

  send(header: ToGateway, payload?: Buffer): boolean {
    return writeFrame(this.sock, header, payload);
  }

  done(id: number): void {
    this.#replies.delete(id);
    if (this.#ending && this.#replies.size === 0) this.sock.end();
  }

  #frame(h: ToFunction, payload: Buffer | null): void {
    switch (h.t) {
      case 'invoke': {
        if (this.sock.destroyed) return;
        const reply = new LinkReply(this, h.id);
        this.#replies.set(h.id, reply);
        const body = payload ?? Buffer.alloc(0);
        this.invoke({
          deadline: h.deadline,
          carrier: h.trace ?? {},
          body(limit, tooLarge) {
            return body.length > limit ? Promise.reject(tooLarge()) : Promise.resolve(body);
          },
        }, reply);
        return;
      }
      case 'cancel':
        return this.#replies.get(h.id)?.abandon();
      case 'pause':
        return this.#replies.get(h.id)?.pause();
      case 'resume':
        return this.#replies.get(h.id)?.resume();
    }
  }
}

/** One request's reply on the link. */
class LinkReply implements InvokeReply {
  started = false;
  status = 0;
  #over = false;
  #paused = false;
  #waiting: Array<() => void> = [];
  readonly #abandoned: Array<() => void> = [];
  readonly #closed: Array<() => void> = [];

  constructor(private readonly conn: LinkConnection, private readonly id: number) {}

  send(status: number, headers: Record<string, string>, body: string): void {
    if (this.#over) return;
    this.#head(status);
    this.conn.send({ t: 'head', id: this.id, status, headers, end: true }, Buffer.from(body));
    this.#finish();
  }

  startStream(headers: Record<string, string>): void {
    if (this.#over) return;
    this.#head(200);
    this.conn.send({ t: 'head', id: this.id, status: 200, headers });
  }

  write(chunk: string): boolean {
    if (this.#over) return true; // nobody reads: the request's cancellation ends the stream
    return this.conn.send({ t: 'data', id: this.id }, Buffer.from(chunk)) && !this.#paused;
  }

  drained(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.maybeDrained();
    });
  }

  end(): void {
    if (this.#over) return;
    this.conn.send({ t: 'end', id: this.id });
    this.#finish();
  }

  cut(): void {
    if (this.#over) return;
    this.conn.send({ t: 'error', id: this.id, message: 'the app function could not complete the reply' });
    this.#finish();
  }

  onAbandoned(listener: () => void): void {
    this.#abandoned.push(listener);
  }

  onClose(listener: () => void): void {
    this.#closed.push(listener);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.maybeDrained();
  }

  /** Releases drained() waiters once neither the gateway nor the connection holds writes back. */
  maybeDrained(): void {
    if (this.#waiting.length === 0 || (!this.#over && (this.#paused || this.conn.sock.writableNeedDrain))) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }

  /** The gateway cancelled the request, or the link closed. */
  abandon(): void {
    if (this.#over) return;
    this.#over = true;
    this.conn.done(this.id);
    for (const listener of this.#abandoned) listener();
    this.#close();
  }

  #head(status: number): void {
    this.started = true;
    this.status = status;
  }

  #finish(): void {
    this.#over = true;
    this.conn.done(this.id);
    this.#close();
  }

  #close(): void {
    for (const listener of this.#closed) listener();
    this.maybeDrained();
  }
}
