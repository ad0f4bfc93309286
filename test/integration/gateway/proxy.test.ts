/**
 * forward() (control/gateway/proxy.ts) between a real client and a real upstream HTTP server: whatever an
 * upstream puts in an error reply or a stream's final error line, no internal address reaches the client.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import express from 'express';
import { forward, keepAliveAgent } from '../../../control/gateway/proxy.js';
import { listen } from '../../../lib/listen.js';

const LEAKY = 'cannot reach the dispatcher at http+unix:///tmp/cs-Ab12/dispatcher.sock (connect ECONNREFUSED 127.0.0.1:40123)';

/** An upstream that answers every POST with `reply`. */
async function upstream(reply: (res: import('node:http').ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => reply(res));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A gateway-like express app forwarding every POST /x to `url`. */
async function gatewayTo(url: string) {
  const app = express();
  const agent = keepAliveAgent();
  app.post('/x', (_req, res) => {
    void forward(res, { url: `${url}/invoke`, body: '{}', deadline: Date.now() + 30_000, agent, what: 'test upstream', onFailure: (e) => e });
  });
  return listen(app, 0);
}

test("an upstream's error reply reaches the client with its code and status, its internal addresses redacted", async (t) => {
  const up = await upstream((res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'DISPATCHER_UNAVAILABLE', message: LEAKY } }));
  });
  const gw = await gatewayTo(up.url);
  t.teardown(() => (up.server.close(), gw.close(0)));
  const res = await fetch(`${gw.url}/x`, { method: 'POST' });
  const text = await res.text();
  t.is(res.status, 503);
  t.is((JSON.parse(text) as { error: { code: string } }).error.code, 'DISPATCHER_UNAVAILABLE');
  t.false(/\/tmp\/|\.sock|127\.0\.0\.1/.test(text), text);
});

test("a stream's final error line is redacted, and the lines before it pass unchanged", async (t) => {
  const data = ['{"text":"see http://127.0.0.1 later"}', '{"error":"not an error line: it has other keys","n":1}'];
  const up = await upstream((res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(`${data[0]}\n`);
    res.write(`${data[1]}\n{"error":{"code":"TASK_FAILED","mess`); // the error line split across two writes
    setTimeout(() => res.end(`age":${JSON.stringify(LEAKY)}}}\n`), 50);
  });
  const gw = await gatewayTo(up.url);
  t.teardown(() => (up.server.close(), gw.close(0)));
  const res = await fetch(`${gw.url}/x`, { method: 'POST' });
  const lines = (await res.text()).trim().split('\n');
  t.is(lines[0], data[0]); // data lines are the app's business
  t.is(lines.length, 3);
  const last = JSON.parse(lines[2]!) as { error: { code: string; message: string } };
  t.is(last.error.code, 'TASK_FAILED');
  t.false(/\/tmp\/|\.sock|127\.0\.0\.1/.test(last.error.message), last.error.message);
});
