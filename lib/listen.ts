/**
 * Listening: starts an HTTP server for a request listener (an express app: the dispatcher, the resource manager; the
 * gateway's listener, its hot route ahead of its express app) on
 * host:port (0 = a free port) and closes it gracefully (idle keep-alive connections at once, in-flight
 * requests get `graceMs`).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

export interface ListeningServer {
  server: Server;
  url: string;
  port: number;
  close(graceMs?: number): Promise<void>;
}

/** `handler`: an express app or any request listener. */
export function listen(handler: RequestListener, port: number, host = '127.0.0.1'): Promise<ListeningServer> {
  return new Promise((resolve, reject) => {
    const server = createServer(handler);
    server.on('clientError', answerClientError);
    server.listen(port, host, () => {
      const actual = (server.address() as AddressInfo).port;
      const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      resolve({ server, port: actual, url: `http://${urlHost}:${actual}`, close: (graceMs = 5_000) => closeServer(server, graceMs) });
    });
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    server.once('error', reject);
  });
}

const CLIENT_ERRORS: Record<string, [status: number, code: string, reason: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'HEADERS_TOO_LARGE', 'Request Header Fields Too Large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'Request Timeout'],
};

/**
 * A request node's parser refuses (a bad request line, header or chunk, a body cut short) gets a JSON error with a
 * code like every other error of the platform, where node would answer a bare 400 without a body.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // Node's own rule: nothing to say on a reset or closed socket, or once a reply to this request has begun.
  const replying = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || replying) return void socket.destroy();
  const [status, code, reason] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'BAD_HTTP_REQUEST', 'Bad Request'];
  const body = JSON.stringify({ error: { code, message: `malformed HTTP request: ${err.message}` } });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

export function closeServer(server: Server, graceMs = 5_000): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
