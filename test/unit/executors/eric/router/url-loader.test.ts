import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { loadUrl, type UrlLoaderOptions } from '../../../../../executors/eric/router/url-loader.js';

let web: Server;
let base: string;
test.before(async () => {
  web = createServer((req, res) => {
    if (req.url === '/img') { res.setHeader('content-type', 'image/png; q=1'); res.end(Buffer.from([1, 2, 3])); return; }
    if (req.url === '/stream-big') { res.write(Buffer.alloc(600)); res.end(Buffer.alloc(600)); return; } // no content-length
    if (req.url === '/to-img') { res.statusCode = 302; res.setHeader('location', '/img'); res.end(); return; }
    if (req.url === '/to-elsewhere') { res.statusCode = 302; res.setHeader('location', 'http://localhost:1/img'); res.end(); return; }
    if (req.url === '/loop') { res.statusCode = 302; res.setHeader('location', '/loop'); res.end(); return; }
    res.statusCode = 500;
    res.end();
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
});
test.after.always(() => { web.closeAllConnections(); web.close(); });

// The test server is on loopback, which the loader refuses unless the private allowlist opens it.
const o: UrlLoaderOptions = { maxBytes: 1000, timeoutMs: 2000, allowFile: false, allowPrivate: ['127.0.0.1'] };
const code = async (p: Promise<unknown>) => ((await p.then(() => undefined, (e: unknown) => e)) as { code?: string } | undefined)?.code;

test('a base64 data: URL gives its bytes and media type', async (t) => {
  const r = await loadUrl(`data:image/png;base64,${Buffer.from([9, 8, 7]).toString('base64')}`, o);
  t.is(r.mime, 'image/png');
  t.deepEqual([...r.parts[0]!], [9, 8, 7]);
});

test('a video data: URL may list several base64 frames', async (t) => {
  const b64 = (n: number) => Buffer.from([n]).toString('base64');
  t.is((await loadUrl(`data:video/jpeg;base64,${b64(1)},${b64(2)},${b64(3)}`, o)).parts.length, 3);
});

test('a data: URL that is not base64 is ERIC_URL_INVALID', async (t) => {
  t.is(await code(loadUrl('data:text/plain,hello', o)), 'ERIC_URL_INVALID');
  t.is(await code(loadUrl('data:image/png;base64,@@@@', o)), 'ERIC_URL_INVALID');
});

test('an http URL is fetched with its content type', async (t) => {
  const r = await loadUrl(`${base}/img`, o);
  t.is(r.mime, 'image/png');
  t.deepEqual([...r.parts[0]!], [1, 2, 3]);
});

test('a loopback, private or metadata URL is ERIC_URL_NOT_ALLOWED unless the private allowlist opens it', async (t) => {
  const closed = { ...o, allowPrivate: [] };
  const err = await loadUrl(`${base}/img`, closed).then(() => undefined, (e: unknown) => e as { code?: string; status?: number; message: string });
  t.like(err, { code: 'ERIC_URL_NOT_ALLOWED', status: 400 });
  t.regex(err!.message, /127\.0\.0\.1 is a loopback address/);
  for (const url of ['http://10.0.0.1/x.png', 'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/']) t.is(await code(loadUrl(url, closed)), 'ERIC_URL_NOT_ALLOWED', url);
  t.is(await code(loadUrl(`${base}/to-img`, { ...o, allowPrivate: ['10.0.0.0/8'] })), 'ERIC_URL_NOT_ALLOWED', 'a range that does not cover it opens nothing');
});

test('a body beyond the limit without Content-Length is cut off as ERIC_INPUT_TOO_LARGE', async (t) => {
  t.is(await code(loadUrl(`${base}/stream-big`, o)), 'ERIC_INPUT_TOO_LARGE');
});

test('redirects are followed, and the allowlist applies to every hop', async (t) => {
  t.deepEqual([...(await loadUrl(`${base}/to-img`, { ...o, allowHosts: ['127.0.0.1'] })).parts[0]!], [1, 2, 3]);
  t.is(await code(loadUrl(`${base}/to-elsewhere`, { ...o, allowHosts: ['127.0.0.1'] })), 'ERIC_URL_NOT_ALLOWED');
  t.is(await code(loadUrl(`${base}/loop`, o)), 'ERIC_URL_FETCH_FAILED');
});

test('a host outside the allowlist is ERIC_URL_NOT_ALLOWED; *.domain matches sub-domains', async (t) => {
  t.is(await code(loadUrl(`${base}/img`, { ...o, allowHosts: ['example.com'] })), 'ERIC_URL_NOT_ALLOWED');
  t.is(await code(loadUrl('http://a.b.example.com/x', { ...o, allowHosts: ['*.other.org'] })), 'ERIC_URL_NOT_ALLOWED');
  // Allowed, so it gets as far as the network (which cannot resolve .invalid).
  t.not(await code(loadUrl('http://sub.example.invalid/x', { ...o, allowHosts: ['*.example.invalid'], timeoutMs: 500 })), 'ERIC_URL_NOT_ALLOWED');
});

test('file: URLs are read only when allowed, within the size limit', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'eric-url-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'small'), Buffer.from([4, 5]));
  writeFileSync(join(dir, 'big'), Buffer.alloc(2000));
  const url = (name: string) => pathToFileURL(join(dir, name)).href;
  t.is(await code(loadUrl(url('small'), o)), 'ERIC_URL_NOT_ALLOWED');
  t.deepEqual([...(await loadUrl(url('small'), { ...o, allowFile: true })).parts[0]!], [4, 5]);
  t.is(await code(loadUrl(url('big'), { ...o, allowFile: true })), 'ERIC_INPUT_TOO_LARGE');
  t.is(await code(loadUrl(url('missing'), { ...o, allowFile: true })), 'ERIC_URL_FETCH_FAILED');
});

test('unknown schemes are ERIC_URL_NOT_ALLOWED', async (t) => {
  t.is(await code(loadUrl('ftp://x/y.png', o)), 'ERIC_URL_NOT_ALLOWED');
});

test('a server error is ERIC_URL_FETCH_FAILED naming the status', async (t) => {
  const e = await t.throwsAsync(loadUrl(`${base}/boom`, o));
  t.regex(e!.message, /500/);
});
