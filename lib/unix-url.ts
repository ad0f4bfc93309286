/**
 * HTTP over unix domain sockets, addressed by URL like every other upstream:
 *
 *   http+unix://<percent-encoded socket path>/<path>     e.g. http+unix://%2Ftmp%2Fcs-ab12%2Fdispatcher.sock/graph
 *
 * Used for the hops between processes of one `cornserve up` on this machine (gateway -> app function ->
 * dispatcher): no TCP stack per message. Any other URL (http://host:port, Kubernetes Service URLs) stays TCP:
 * every caller builds its requests with requestTarget()/httpRequest(), which handle both.
 *
 * Servers: listenUnix() listens at a socket path (removing a stale file a crashed process left behind) and
 * resolves with the URL; closing the server removes the socket file (libuv unlinks it).
 */
import { request, type ClientRequest, type IncomingMessage, type RequestOptions, type Server } from 'node:http';
import { rmSync } from 'node:fs';

export const UNIX_PROTOCOL = 'http+unix:';

/** The base URL of a server listening on `socketPath` (absolute). */
export function unixUrl(socketPath: string): string {
  return `http+unix://${encodeURIComponent(socketPath)}`;
}

/** The socket path of an `http+unix:` URL; undefined for any other URL. */
export function socketPathOf(url: string | URL): string | undefined {
  const u = typeof url === 'string' ? new URL(url) : url;
  return u.protocol === UNIX_PROTOCOL ? decodeURIComponent(u.host) : undefined;
}

/** node:http request options addressing `url`: `{socketPath, path}` for http+unix, host/port/path for http. */
export function requestTarget(url: string | URL): RequestOptions {
  const u = typeof url === 'string' ? new URL(url) : url;
  const path = `${u.pathname}${u.search}`;
  if (u.protocol === UNIX_PROTOCOL) return { socketPath: decodeURIComponent(u.host), path };
  if (u.protocol !== 'http:') throw new TypeError(`unsupported URL protocol ${u.protocol} in ${u.href} (http: or ${UNIX_PROTOCOL})`);
  return { protocol: u.protocol, hostname: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname, port: u.port || 80, path };
}

/** `http.request` for an http: or http+unix: URL (pass an Agent in `options` for keep-alive). */
export function httpRequest(url: string | URL, options: RequestOptions, onResponse?: (res: IncomingMessage) => void): ClientRequest {
  return request({ ...requestTarget(url), ...options }, onResponse);
}

/** Listens `server` on the unix socket `socketPath` (a stale file there is removed first); resolves with its URL. */
export function listenUnix(server: Server, socketPath: string): Promise<string> {
  rmSync(socketPath, { force: true });
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(socketPath, () => {
      server.off('error', onError);
      resolve(unixUrl(socketPath));
    });
  });
}

/** GET `url` (either kind); resolves with the status, rejects on a connection error or after `timeoutMs`. */
export function probe(url: string | URL, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy(new Error(`no reply from ${String(url)} within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}
