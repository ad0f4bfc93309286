import test from 'ava';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeServer } from '../../../lib/listen.js';
import { httpRequest, listenUnix, probe, requestTarget, socketPathOf, unixUrl } from '../../../lib/unix-url.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cs-unix-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A server answering `<method> <url>` as text. */
function echoServer(t: { teardown(fn: () => Promise<void>): void }): Server {
  const server = createServer((req, res) => res.end(`${req.method} ${req.url}`));
  t.teardown(() => closeServer(server, 0));
  return server;
}

const text = (url: string) =>
  new Promise<string>((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve(body));
    });
    req.once('error', reject);
    req.end();
  });

test('a request to an http+unix URL reaches the server on that socket, with its path and query', async (t) => {
  const socket = join(tempDir(t), 'a.sock');
  const url = await listenUnix(echoServer(t), socket);
  t.is(url, unixUrl(socket));
  t.is(await text(`${url}/invoke?x=1`), 'GET /invoke?x=1');
});

test('closing the server removes its socket file', async (t) => {
  const socket = join(tempDir(t), 'b.sock');
  const server = echoServer(t);
  await listenUnix(server, socket);
  t.true(existsSync(socket));
  await closeServer(server, 0);
  t.false(existsSync(socket));
});

test('listenUnix replaces a stale file a crashed process left at the socket path', async (t) => {
  const socket = join(tempDir(t), 'c.sock');
  writeFileSync(socket, 'stale');
  const url = await listenUnix(echoServer(t), socket);
  t.is(await text(`${url}/health`), 'GET /health');
});

test('a socket path with spaces and percent signs survives the URL round trip', (t) => {
  const socket = '/tmp/a dir/50%/x.sock';
  t.is(socketPathOf(`${unixUrl(socket)}/invoke`), socket);
  t.deepEqual(requestTarget(new URL('/graph?a=b', unixUrl(socket))), { socketPath: socket, path: '/graph?a=b' });
});

test('an http:// URL (a remote or Kubernetes Service) stays TCP: host and port, no socket path', (t) => {
  t.deepEqual(requestTarget('http://cs-app-hello.ns.svc.cluster.local/invoke'), { protocol: 'http:', hostname: 'cs-app-hello.ns.svc.cluster.local', port: 80, path: '/invoke' });
  t.deepEqual(requestTarget('http://[::1]:8100/graph'), { protocol: 'http:', hostname: '::1', port: '8100', path: '/graph' });
  t.is(socketPathOf('http://127.0.0.1:8000'), undefined);
});

test('a URL of any other protocol is refused', (t) => {
  t.throws(() => requestTarget('https://example.com/x'), { message: /unsupported URL protocol https:/ });
});

test('probe gives the status of a server behind a unix socket and rejects when nothing listens', async (t) => {
  const dir = tempDir(t);
  const url = await listenUnix(echoServer(t), join(dir, 'd.sock'));
  t.is(await probe(`${url}/health`, 2_000), 200);
  await t.throwsAsync(probe(`${unixUrl(join(dir, 'none.sock'))}/health`, 2_000), { code: 'ENOENT' });
});
