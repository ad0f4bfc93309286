/**
 * Listening: starts an HTTP server for a request listener (an express app: the dispatcher, the resource manager; the
 * gateway's listener, its hot route ahead of its express app) on
 * host:port (0 = a free port) and closes it gracefully (idle keep-alive connections at once, in-flight
 * requests get `graceMs`).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
