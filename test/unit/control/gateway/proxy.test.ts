/** The gateway's upstream calls keep their deadline timer: a deadline past setTimeout's range does not fire at once. */
import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { forward, keepAliveAgent, openUpstream } from '../../../../control/gateway/proxy.js';
import { sleep } from '../../../../lib/wait.js';

const FAR = () => Date.now() + 30 * 24 * 3600_000;
const servers: Server[] = [];
const agent = keepAliveAgent();
test.after.always(() => {
  servers.forEach((s) => s.close());
  agent.destroy();
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An upstream that answers `{"ok":true}` 100 ms after the request. */
const slowUpstream = () => listen(createServer((req, res) => {
  req.resume();
  req.on('end', () => void sleep(100).then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')));
}));

test('openUpstream with a deadline beyond setTimeout range (30 days) waits for the reply', async (t) => {
  const url = await slowUpstream();
  const res = await openUpstream({ url, body: '{}', deadline: FAR(), agent, what: 'the slow upstream', signal: new AbortController().signal });
  let body = '';
  for await (const chunk of res) body += String(chunk);
  t.is(body, '{"ok":true}');
});

test('forward with a deadline beyond setTimeout range (30 days) passes the reply on', async (t) => {
  const url = await slowUpstream();
  const app = express();
  app.post('/', (_req, res) => void forward(res, { url, body: '{}', deadline: FAR(), agent, what: 'the slow upstream', onFailure: (e) => e }));
  const gateway = await listen(createServer(app));
  const res = await fetch(gateway, { method: 'POST' });
  t.is(res.status, 200);
  t.is(await res.text(), '{"ok":true}');
});

test('an error reply quoting the URL the client sent passes it on as written; our own addresses are still redacted', async (t) => {
  const userUrl = 'http://127.0.0.1:18811/metrics';
  const url = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({
      error: { code: 'ERIC_URL_NOT_ALLOWED', message: `${userUrl}: 127.0.0.1 is a loopback address (executor at http://127.0.0.1:41234)` },
    })));
  }));
  const app = express();
  const body = JSON.stringify({ request_data: { image_url: userUrl } });
  app.post('/', (_req, res) => void forward(res, { url, body, deadline: FAR(), agent, what: 'the app function', onFailure: (e) => e }));
  const gateway = await listen(createServer(app));
  const res = await fetch(gateway, { method: 'POST' });
  const reply = (await res.json()) as { error: { message: string } };
  t.is(reply.error.message, `${userUrl}: 127.0.0.1 is a loopback address (executor at <internal address>)`);
});
