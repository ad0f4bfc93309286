/**
 * The SSRF guard every executor fetches through (lib/fetch-guard.ts): address classes refused by default, checked
 * after DNS at connect time and on every redirect hop; the allowlist opens them explicitly. Real HTTP servers on
 * 127.0.0.1; host names resolve through an injected resolver (no DNS server here) or, for `localhost`, the system's.
 */
import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FetchGuard, TooManyRedirectsError, UrlNotAllowedError, blockedBecause, type Resolver } from '../../../lib/fetch-guard.js';

let web: Server;
let port: number;
const hits: string[] = [];
test.before(async () => {
  web = createServer((req, res) => {
    hits.push(`${req.headers.host}${req.url}`);
    const to = new URL(req.url!, 'http://x').searchParams.get('to');
    if (to) { res.writeHead(302, { location: to }).end(); return; }
    if (req.url === '/loop') { res.writeHead(302, { location: '/loop' }).end(); return; }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`secret from ${req.url}`);
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  port = (web.address() as AddressInfo).port;
});
test.after.always(() => { web.closeAllConnections(); web.close(); });

/** A resolver for made-up names (every one resolves to the given addresses). */
const resolver = (table: Record<string, string[]>): Resolver => async (host) => {
  const addrs = table[host];
  if (!addrs) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const refusal = async (p: Promise<unknown>) => {
  const e = await p.then(() => undefined, (err: unknown) => err);
  return e instanceof UrlNotAllowedError ? e.message : `not refused: ${String(e)}`;
};

test('each address class is named: loopback, private, ULA, link-local, CGNAT, unspecified, multicast, metadata; public unicast passes', (t) => {
  const cases: Array<[string, RegExp | undefined]> = [
    ['127.0.0.1', /loopback/], ['127.8.9.10', /loopback/], ['::1', /loopback/], ['::ffff:127.0.0.1', /loopback/],
    ['10.1.2.3', /private/], ['172.16.5.4', /private/], ['192.168.0.1', /private/], ['::ffff:10.0.0.1', /private/],
    ['fc00::1', /unique local/], ['fd12:3456::1', /unique local/],
    ['169.254.10.20', /link-local/], ['fe80::1', /link-local/],
    ['100.64.0.1', /carrier-grade NAT/], ['0.0.0.0', /unspecified/], ['::', /unspecified/],
    ['224.0.0.1', /multicast/], ['ff02::1', /multicast/], ['255.255.255.255', /broadcast/],
    ['169.254.169.254', /metadata/], ['fd00:ec2::254', /metadata/], ['100.100.100.200', /metadata/], ['192.0.0.192', /metadata/],
    ['8.8.8.8', undefined], ['93.184.216.34', undefined], ['2606:4700:4700::1111', undefined],
  ];
  for (const [ip, expected] of cases) {
    const why = blockedBecause(ip);
    if (expected) t.regex(why ?? 'allowed', expected, ip);
    else t.is(why, undefined, ip);
  }
});

test('literal loopback, private, link-local, metadata and unspecified URLs are refused before any connection', async (t) => {
  const guard = new FetchGuard();
  t.teardown(() => guard.close());
  for (const url of [
    `http://127.0.0.1:${port}/never`, `http://[::1]:${port}/never`, `http://[::ffff:127.0.0.1]:${port}/never`, `http://2130706433:${port}/never`,
    `http://0x7f.1:${port}/never`, `http://0.0.0.0:${port}/never`, 'http://10.0.0.1/', 'http://192.168.1.1/', 'http://[fd00::1]/', 'http://100.64.1.1/',
    'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/latest/meta-data/', 'http://[fe80::1]/', 'http://224.0.0.1/',
  ]) {
    t.regex(await refusal(guard.fetch(url)), /is (a|the) .* address/, url);
  }
  t.false(hits.some((h) => h.includes('/never')), 'no request reached the server');
});

test('a host name that resolves to a private address is refused; the system resolver\'s localhost too', async (t) => {
  const guard = new FetchGuard({ resolve: resolver({ 'evil.test': ['127.0.0.1'], 'mixed.test': ['93.184.216.34', '10.0.0.7'] }) });
  t.teardown(() => guard.close());
  t.regex(await refusal(guard.fetch(`http://evil.test:${port}/never`)), /evil\.test \(127\.0\.0\.1\) is a loopback address/);
  t.regex(await refusal(guard.fetch('http://mixed.test/')), /mixed\.test \(10\.0\.0\.7\) is a private/, 'one private address among public ones is enough');
  const system = new FetchGuard();
  t.teardown(() => system.close());
  t.regex(await refusal(system.fetch(`http://localhost:${port}/never`)), /localhost \(.*\) is a loopback address/);
  t.false(hits.some((h) => h.includes('/never')), 'no request reached the server');
});

test('the connection goes to the checked address: an opened name is fetched from the address it resolved to', async (t) => {
  // `evil.test` exists only in the injected resolver, so reaching the server proves the socket used its answer.
  const guard = new FetchGuard({ allowPrivate: ['127.0.0.1/32'], resolve: resolver({ 'evil.test': ['127.0.0.1'] }) });
  t.teardown(() => guard.close());
  const { response } = await guard.fetch(`http://evil.test:${port}/pinned`);
  t.is(await response.text(), 'secret from /pinned');
  t.is(hits.at(-1), `evil.test:${port}/pinned`, 'the Host header keeps the URL\'s name');
});

test('the allowlist opens CIDRs, single addresses and host names', async (t) => {
  for (const allowPrivate of [['127.0.0.0/8'], ['127.0.0.1'], ['::ffff:127.0.0.1/128'], ['media.test'], ['*.test']]) {
    const guard = new FetchGuard({ allowPrivate, resolve: resolver({ 'media.test': ['127.0.0.1'] }) });
    const { response } = await guard.fetch(`http://media.test:${port}/open`);
    t.is(response.status, 200, allowPrivate.join());
    await response.text();
    await guard.close();
  }
  const narrow = new FetchGuard({ allowPrivate: ['10.0.0.0/8', 'other.test'], resolve: resolver({ 'media.test': ['127.0.0.1'] }) });
  t.teardown(() => narrow.close());
  t.regex(await refusal(narrow.fetch(`http://media.test:${port}/`)), /loopback/, 'entries that do not cover the address open nothing');
});

test('a metadata address opens only when named exactly, never through a range or a host name', async (t) => {
  const resolve = resolver({ 'metadata.google.internal': ['169.254.169.254'] });
  const wide = new FetchGuard({ allowPrivate: ['169.254.0.0/16', '0.0.0.0/0', 'metadata.google.internal'], resolve });
  const exact = new FetchGuard({ allowPrivate: ['169.254.169.254'], resolve });
  t.teardown(async () => { await wide.close(); await exact.close(); });
  t.regex(await refusal(wide.addressFor('169.254.169.254')), /metadata/);
  t.regex(await refusal(wide.addressFor('metadata.google.internal')), /metadata/);
  t.is(await wide.addressFor('169.254.1.1'), '169.254.1.1', 'the range still opens the rest of link-local');
  t.is(await exact.addressFor('metadata.google.internal'), '169.254.169.254');
});

test('a redirect from an allowed host to a private one is refused at that hop', async (t) => {
  // public.test is opened by name; it redirects to the loopback literal, to a name resolving to 10.x, and to localhost.
  const guard = new FetchGuard({ allowPrivate: ['public.test'], resolve: resolver({ 'public.test': ['127.0.0.1'], 'intranet.test': ['10.1.1.1'], localhost: ['127.0.0.1'] }) });
  t.teardown(() => guard.close());
  const ok = await guard.fetch(`http://public.test:${port}/?to=/img`);
  t.is(await ok.response.text(), 'secret from /img', 'a redirect within the allowed host is followed');
  t.is(ok.url, `http://public.test:${port}/img`);
  for (const to of [`http://127.0.0.1:${port}/never`, 'http://intranet.test/never', `http://localhost:${port}/never`, `http://[::1]:${port}/never`]) {
    t.regex(await refusal(guard.fetch(`http://public.test:${port}/?to=${encodeURIComponent(to)}`)), /is a (loopback|private)/, to);
  }
  t.false(hits.some((h) => h.includes('/never')), 'the redirect target was never requested');
  t.regex(await refusal(guard.fetch(`http://public.test:${port}/?to=${encodeURIComponent('file:///etc/passwd')}`)), /file: URLs are not fetched/);
});

test('redirects are bounded', async (t) => {
  const guard = new FetchGuard({ allowPrivate: ['127.0.0.1'], maxRedirects: 2 });
  t.teardown(() => guard.close());
  await t.throwsAsync(guard.fetch(`http://127.0.0.1:${port}/loop`), { instanceOf: TooManyRedirectsError });
});

test('onlyHosts restricts host names on every hop', async (t) => {
  const guard = new FetchGuard({ allowPrivate: ['127.0.0.1'], onlyHosts: ['127.0.0.1'], resolve: resolver({ 'elsewhere.test': ['127.0.0.1'] }) });
  t.teardown(() => guard.close());
  t.regex(await refusal(guard.fetch(`http://127.0.0.1:${port}/?to=${encodeURIComponent(`http://elsewhere.test:${port}/`)}`)), /not in the URL allowlist/);
});

test('an allowlist entry that is neither a CIDR, an address nor a host name is refused at construction', (t) => {
  t.throws(() => new FetchGuard({ allowPrivate: ['10.0.0.0/33'] }), { message: /not a valid CIDR/ });
  t.throws(() => new FetchGuard({ allowPrivate: ['not a host'] }), { message: /neither a CIDR/ });
});
