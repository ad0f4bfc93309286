/**
 * The gateway's metrics (control/gateway/metrics.ts): the hot path counts in plain numbers and /metrics shows them —
 * each invocation once, however often it is scraped, in flight until it ends.
 */
import test from 'ava';
import { Registry } from 'prom-client';
import { GatewayMetrics } from '../../../../control/gateway/metrics.js';
import { MemoryStore } from '../../../../control/store/memory.js';

const line = (text: string, name: string) => text.split('\n').find((l) => l.startsWith(name))?.split(' ').at(-1);

test('invocations, their durations and HTTP requests reach /metrics at the scrape, each counted once across scrapes', async (t) => {
  const registry = new Registry();
  const metrics = new GatewayMetrics(registry, new MemoryStore());
  for (let i = 0; i < 3; i++) metrics.invocationStarted('echo')(200);
  metrics.invocationStarted('echo')(422);
  metrics.httpRequest('/app/invoke/:app_id', 'POST', 200);
  const open = metrics.invocationStarted('echo');

  let text = await registry.metrics();
  t.is(line(text, 'cornserve_gateway_requests_total{app="echo",status="200"}'), '3');
  t.is(line(text, 'cornserve_gateway_requests_total{app="echo",status="422"}'), '1');
  t.is(line(text, 'cornserve_gateway_request_duration_seconds_count{app="echo"}'), '4');
  t.is(line(text, 'cornserve_gateway_in_flight_requests{app="echo"}'), '1');
  t.is(line(text, 'cornserve_gateway_http_requests_total{route="/app/invoke/:app_id",method="POST",status="200"}'), '1');

  open(200);
  metrics.httpRequest('/app/invoke/:app_id', 'POST', 200);
  text = await registry.metrics();
  t.is(line(text, 'cornserve_gateway_requests_total{app="echo",status="200"}'), '4');
  t.is(line(text, 'cornserve_gateway_requests_total{app="echo",status="422"}'), '1');
  t.is(line(text, 'cornserve_gateway_request_duration_seconds_count{app="echo"}'), '5');
  t.is(line(text, 'cornserve_gateway_in_flight_requests{app="echo"}'), '0');
  t.is(line(text, 'cornserve_gateway_http_requests_total{route="/app/invoke/:app_id",method="POST",status="200"}'), '2');
  await metrics.load.close();
});

test('durations held between scrapes, past the batch handed over unscraped, are neither lost nor observed twice', async (t) => {
  const registry = new Registry();
  const metrics = new GatewayMetrics(registry, new MemoryStore());
  for (let i = 0; i < 5_000; i++) metrics.invocationStarted('echo')(200);
  const text = await registry.metrics();
  t.is(line(text, 'cornserve_gateway_request_duration_seconds_count{app="echo"}'), '5000');
  t.is(line(text, 'cornserve_gateway_requests_total{app="echo",status="200"}'), '5000');
  await metrics.load.close();
});
