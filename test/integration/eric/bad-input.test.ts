/** Eric's answers to bad input: whole-request 400s, per-item 4xx, and other requests unaffected. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { callExecutor } from '../../../control/dispatcher/executor-client.js';
import { TaskFailedError } from '../../../lib/dispatch-errors.js';
import { type EricFixture, TINY_A, dataUrl, startEric } from '../../helpers/eric.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { makeImage } from '../../helpers/media.js';
import { type SidecarCluster, startSidecars } from '../../helpers/sidecar.js';

let sc: SidecarCluster;
let eric: EricFixture;
let consumer: SidecarClient;
let web: Server;
let webUrl: string;
let png: Buffer;
const FETCH_TIMEOUT_MS = 3_000;
const dir = mkdtempSync(join(tmpdir(), 'eric-bad-input-'));

test.before(async () => {
  png = await makeImage(56, 56, { seed: 1 });
  web = createServer((req, res) => {
    if (req.url === '/hang') return; // never answers
    if (req.url === '/big') { res.setHeader('content-length', String(10 << 20)); res.write(Buffer.alloc(1024)); return; }
    if (req.url === '/ok.png') { res.setHeader('content-type', 'image/png'); res.end(png); return; }
    res.statusCode = 404;
    res.end('nope');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  sc = await startSidecars({ nodes: [[0, 1]] });
  // The fetch limit must exceed what a local server takes to answer on a loaded machine (300 ms did not: the
  // 404 and local-image cases then failed with ERIC_URL_TIMEOUT at load ~30 on 2 cores).
  eric = await startEric({
    modality: 'image', ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath,
    // The test's web server is on loopback: only 127.0.0.1 is opened (not ::1, not the rest of 127/8).
    args: ['--fetch-timeout-ms', String(FETCH_TIMEOUT_MS), '--max-input-bytes', String(1 << 20), '--allow-private-urls', '127.0.0.1'],
  });
  consumer = await sc.client(1);
});
test.after.always(async () => {
  await eric?.stop();
  await sc?.stop();
  web?.closeAllConnections();
  web?.close();
  rmSync(dir, { recursive: true, force: true });
});

const item = (url: string, id = `${uniquePrefix()}x`) => ({ id, modality: 'image', model_id: TINY_A, url, receiver_sidecar_ranks: [[1]] });

test('an unsupported model id is a 400 "Unsupported model ID"', async (t) => {
  const res = await eric.embed([{ ...item(dataUrl('image/png', png)), model_id: 'someone/else' }]);
  t.is(res.status, 400);
  t.is(res.body.error.code, 'ERIC_UNSUPPORTED_MODEL_ID');
  t.regex(res.body.error.message, /^Unsupported model ID/);
});

test('an unsupported modality is a 400 "Unsupported modality"', async (t) => {
  const res = await eric.embed([{ ...item(dataUrl('image/png', png)), modality: 'audio' }]);
  t.is(res.status, 400);
  t.regex(res.body.error.message, /^Unsupported modality/);
});

test('a request that does not match the schema is a 422 naming the field', async (t) => {
  const res = await eric.embed([{ id: 'a', modality: 'image', model_id: TINY_A } as never]);
  t.is(res.status, 422);
  t.regex(res.body.error.message, /data\.0\.url/);
});

test('a corrupt image fails only its own request; the requests batched with it succeed', async (t) => {
  const p = uniquePrefix();
  const [a, bad, b] = await Promise.all([
    eric.embed([item(dataUrl('image/png', png), `${p}a`)]),
    eric.embed([item(dataUrl('image/png', Buffer.from('definitely not a png')), `${p}bad`)]),
    eric.embed([item(dataUrl('image/png', png), `${p}b`)]),
  ]);
  t.is(bad.status, 422);
  t.is(bad.body.error.code, 'MODEL_INPUT_CORRUPT');
  t.deepEqual([a.status, b.status], [200, 200]);
  for (const id of [`${p}a`, `${p}b`]) {
    t.deepEqual(((await consumer.recv(id, 0, { timeoutMs: 10_000 })) as { shape: number[] }).shape, [4, 256]);
    await consumer.markDone(id, 0);
  }
});

test('a truncated image is a 422 for that item', async (t) => {
  const jpeg = await makeImage(224, 224, { format: 'jpeg' });
  const res = await eric.embed([item(dataUrl('image/jpeg', jpeg.subarray(0, jpeg.length - 300)))]);
  t.is(res.status, 422);
  t.is(res.body.error.details.items[0].code, 'MODEL_INPUT_CORRUPT');
});

test('a URL that does not answer in time is a 422 ERIC_URL_TIMEOUT', async (t) => {
  const res = await eric.embed([item(`${webUrl}/hang`)]);
  t.is(res.status, 422);
  t.is(res.body.error.code, 'ERIC_URL_TIMEOUT');
  t.regex(res.body.error.message, new RegExp(`within ${FETCH_TIMEOUT_MS} ms`));
});

test('a URL answering 404 is a 422 ERIC_URL_FETCH_FAILED', async (t) => {
  const res = await eric.embed([item(`${webUrl}/missing.png`)]);
  t.is(res.status, 422);
  t.is(res.body.error.code, 'ERIC_URL_FETCH_FAILED');
  t.regex(res.body.error.message, /404/);
});

test('an http(s) image is fetched and encoded', async (t) => {
  const id = `${uniquePrefix()}web`;
  t.is((await eric.embed([item(`${webUrl}/ok.png`, id)])).status, 200);
  t.truthy(await consumer.recv(id, 0, { timeoutMs: 10_000 }));
  await consumer.markDone(id, 0);
});

test('loopback, private and metadata URLs outside --allow-private-urls are a 400 ERIC_URL_NOT_ALLOWED', async (t) => {
  const port = new URL(webUrl).port;
  for (const url of [`http://[::1]:${port}/ok.png`, `http://127.0.0.2:${port}/ok.png`, 'http://10.0.0.1/ok.png', 'http://169.254.169.254/latest/meta-data/']) {
    const res = await eric.embed([item(url)]);
    t.is(res.status, 400, url);
    t.is(res.body.error.code, 'ERIC_URL_NOT_ALLOWED', url);
    t.regex(res.body.error.message, /loopback|private|metadata/, url);
  }
});

test('a refused URL reaches the caller through the dispatcher quoted as the user wrote it, in one readable sentence', async (t) => {
  const url = `http://127.0.0.2:${new URL(webUrl).port}/metrics`;
  const site = { invocation: 0, task: 'encoder', taskId: 'encodertask-1', executorId: 'eric-0', url: eric.url };
  const call = callExecutor({ site, request: { path: '/embeddings', body: { data: [item(url, 'item-1')] } }, deadline: Date.now() + 60_000, headers: {}, signal: new AbortController().signal });
  const err = await t.throwsAsync(call, { instanceOf: TaskFailedError });
  t.is(err!.code, 'ERIC_URL_NOT_ALLOWED');
  t.is(err!.message, `task encoder failed: item item-1: ${url}: 127.0.0.2 is a loopback address; it may be fetched only when the private URL allowlist opens it`);
});

test('an input over --max-input-bytes is a 413, from a data: URL or a declared Content-Length', async (t) => {
  for (const url of [dataUrl('image/png', Buffer.alloc(2 << 20)), `${webUrl}/big`]) {
    const res = await eric.embed([item(url)]);
    t.is(res.status, 413);
    t.is(res.body.error.code, 'ERIC_INPUT_TOO_LARGE');
  }
});

test('a malformed x-cornserve-deadline header is a 400 EXECUTOR_BAD_DEADLINE', async (t) => {
  const res = await eric.embed([{ ...item(dataUrl('image/png', png)), receiver_sidecar_ranks: null }], { 'x-cornserve-deadline': 'soon' });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'EXECUTOR_BAD_DEADLINE');
  t.regex(res.body.error.message, /x-cornserve-deadline/);
});

test('file: URLs are refused unless --allow-file-urls is given', async (t) => {
  const path = join(dir, 'a.png');
  writeFileSync(path, png);
  const res = await eric.embed([item(pathToFileURL(path).href)]);
  t.is(res.status, 400);
  t.is(res.body.error.code, 'ERIC_URL_NOT_ALLOWED');
});

test('an item failing in a request with receivers leaves nothing for its consumer to wait for', async (t) => {
  const id = `${uniquePrefix()}gone`;
  t.is((await eric.embed([item(`${webUrl}/missing.png`, id)])).status, 422);
  const err = await t.throwsAsync(consumer.recv(id, 0, { timeoutMs: 10_000 }));
  t.is((err as { code?: string }).code, 'SIDECAR_PRODUCER_FAILED');
});
