/**
 * Tracing: the client's send / recv / markDone spans are children of the caller's span, and the traceparent
 * they carry (client → sidecar and sidecar → sidecar frames) makes both sidecars' spans join the same trace.
 * Two sidecar servers run in this process so one in-memory exporter sees every span.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { freePort } from '../../../lib/net.js';
import { startTelemetry, stopTelemetry, trace, withSpan } from '../../../lib/telemetry.js';
import { waitUntil } from '../../../lib/wait.js';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { SidecarServer } from '../../../sidecar/server/server.js';
import { TEST_SLABS } from '../../helpers/sidecar.js';
import { makeTensor, newId } from './transfer.js';

const exporter = new InMemorySpanExporter();
const dir = mkdtempSync(join(tmpdir(), 'cs-sidecar-trace-'));
const servers: SidecarServer[] = [];
const clients: SidecarClient[] = [];

test.before(async () => {
  await startTelemetry('sidecar-tracing-test', [new SimpleSpanProcessor({ exporter })]);
  const nodes = [{ node: 'n0', ranks: [0, 1], port: await freePort() }, { node: 'n1', ranks: [2], port: await freePort() }];
  for (const n of nodes) {
    servers.push(new SidecarServer({
      node: n.node, ranks: n.ranks, socketPath: join(dir, `${n.node}.sock`), peerPort: n.port, slabs: TEST_SLABS,
      peers: nodes.filter((p) => p !== n).map((p) => ({ node: p.node, host: '127.0.0.1', port: p.port, ranks: p.ranks })),
    }));
  }
  await Promise.all(servers.map((s) => s.start()));
});

test.after.always(async () => {
  for (const c of clients) c.close();
  await Promise.all(servers.map((s) => s.stop()));
  await stopTelemetry();
  rmSync(dir, { recursive: true, force: true });
});

const client = async (rank: number) => {
  const c = await SidecarClient.connect({ rank, socketPath: join(dir, `${rank < 2 ? 'n0' : 'n1'}.sock`), timeoutMs: 20_000 });
  clients.push(c);
  return c;
};

/** Runs `fn` inside a caller span; returns that span's trace and span ids. */
const asCaller = async (fn: () => Promise<void>) =>
  withSpan('caller', async (span) => { await fn(); return span.spanContext(); });

const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
/** Waits until the trace holds every span in `names` (server spans may end just after the client's). */
const waitForSpans = (traceId: string, names: string[]) =>
  waitUntil(`spans ${names.join(', ')}`, () => { const s = spansOf(traceId); return names.every((n) => named(s, n).length > 0) ? s : false; });

test('a send\'s and a recv\'s client spans are children of the caller\'s span, in its trace', async (t) => {
  const [prod, cons] = [await client(0), await client(1)];
  const id = newId();
  const caller = await asCaller(async () => {
    await prod.send(makeTensor('f32', [64]), id, [[1]]);
    await cons.recv(id);
    await cons.markDone(id);
  });
  const spans = await waitForSpans(caller.traceId, ['sidecar.send', 'sidecar.recv', 'sidecar.markDone']);
  for (const name of ['sidecar.send', 'sidecar.recv', 'sidecar.markDone']) {
    const [span] = named(spans, name);
    t.is(span!.parentSpanContext?.spanId, caller.spanId, `${name} is a child of the caller`);
    t.is(span!.attributes['sidecar.id'], id, `${name} names the id`);
  }
});

test('across nodes the sidecars\' spans join the caller\'s trace: put → push → peer receive, then recv and markDone on the consumer\'s node', async (t) => {
  const [prod, cons] = [await client(0), await client(2)];
  const id = newId();
  const caller = await asCaller(async () => {
    await prod.send(makeTensor('f32', [64, 1024]), id, [[2]]); // 256 KiB: alloc + put
    await cons.recv(id);
    await cons.markDone(id);
  });
  const names = ['sidecar.server.alloc', 'sidecar.server.put', 'sidecar.push', 'sidecar.peer.recv', 'sidecar.server.recv', 'sidecar.server.done'];
  const spans = await waitForSpans(caller.traceId, names);
  const one = (name: string) => named(spans, name)[0]!;
  const [send, recv] = [one('sidecar.send'), one('sidecar.recv')];
  t.is(one('sidecar.server.put').parentSpanContext?.spanId, send.spanContext().spanId, 'put is served as part of the send');
  t.is(one('sidecar.push').parentSpanContext?.spanId, one('sidecar.server.put').spanContext().spanId, 'the push belongs to the put');
  t.is(one('sidecar.peer.recv').parentSpanContext?.spanId, one('sidecar.push').spanContext().spanId, 'the receiving sidecar continues the push');
  t.is(one('sidecar.server.recv').parentSpanContext?.spanId, recv.spanContext().spanId, 'recv is served as part of the recv');
  t.is(one('sidecar.peer.recv').attributes['sidecar.peer'], 'n0');
});

test('calls outside any span still give the sidecar\'s spans one trace per call', async (t) => {
  const [prod, cons] = [await client(0), await client(1)];
  const id = newId();
  t.is(trace.getActiveSpan(), undefined);
  await prod.send({ hello: 'world' }, id, [[1]]);
  const send = await waitUntil('send span', () => exporter.getFinishedSpans().find((s) => s.name === 'sidecar.send' && s.attributes['sidecar.id'] === id));
  const spans = await waitForSpans(send.spanContext().traceId, ['sidecar.server.put']);
  t.is(named(spans, 'sidecar.server.put')[0]!.parentSpanContext?.spanId, send.spanContext().spanId);
  await cons.recv(id);
  await cons.markDone(id);
});
