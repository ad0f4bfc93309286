/** lib/telemetry with spans off (this process never configures an exporter): the trace context still passes on. */
import test from 'ava';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { currentTraceparent, isTraceparent, startTelemetry, traceHeaders, traceRequests, tracingOn, withSpan, withTraceparent } from '../../../lib/telemetry.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

test.before(() => startTelemetry('telemetry-test'));

test('without an exporter no span is recorded', async (t) => {
  t.false(tracingOn());
  t.false(await withSpan('nothing', async (span) => span.isRecording()));
});

test('a request\'s traceparent is what the handler passes on, through awaits', async (t) => {
  const app = express();
  app.use(traceRequests('test'));
  app.get('/', async (_req, res) => {
    await new Promise((r) => setTimeout(r, 5));
    res.json({ current: currentTraceparent() ?? null, headers: traceHeaders() });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  t.teardown(() => void server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  t.deepEqual(await (await fetch(url, { headers: { traceparent: TP } })).json(), { current: TP, headers: { traceparent: TP } });
  t.deepEqual(await (await fetch(url)).json(), { current: null, headers: {} }, 'no traceparent in, none out');
  t.deepEqual(await (await fetch(url, { headers: { traceparent: 'garbage' } })).json(), { current: null, headers: {} }, 'an invalid one is dropped');
});

test('withTraceparent makes a message\'s traceparent (CloudEvent, ZeroMQ) the current one', async (t) => {
  t.is(await withTraceparent(TP, async () => { await Promise.resolve(); return currentTraceparent(); }), TP);
  t.is(currentTraceparent(), undefined);
});

test('a traceparent is version-id-parent-flags in lower-case hex, ids not all zero', (t) => {
  t.true(isTraceparent(TP));
  for (const bad of ['', TP.toUpperCase(), '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', `${TP}-x`]) t.false(isTraceparent(bad), bad);
});
