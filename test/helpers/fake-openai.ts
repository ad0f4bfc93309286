/**
 * A tiny OpenAI-compatible server (a real HTTP server on a free port) for tests of clients of that API:
 * `POST /v1/chat/completions` streams `words` as chat chunks (SSE, with a comment line and an `event:` line
 * mixed in, as some servers send) or answers one completion; `GET /v1/models`. It records the requests.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

export interface FakeOpenAI {
  url: string;
  requests: { body: any; headers: Record<string, string | string[] | undefined> }[];
  close(): Promise<void>;
}

export async function startFakeOpenAI(opts: { words?: string[]; model?: string; apiKey?: string } = {}): Promise<FakeOpenAI> {
  const words = opts.words ?? ['Hello', ' from', ' the', ' fake', ' ✓'];
  const model = opts.model ?? 'fake/model';
  const requests: FakeOpenAI['requests'] = [];
  const app = express();
  app.use(express.json());
  const authorized = (h: string | undefined) => !opts.apiKey || h === `Bearer ${opts.apiKey}`;
  app.get('/v1/models', (req, res) => {
    if (!authorized(req.get('authorization'))) return void res.status(401).json({ error: { message: 'bad key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    res.json({ object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'fake' }] });
  });
  app.post('/v1/chat/completions', (req, res) => {
    requests.push({ body: req.body, headers: req.headers });
    if (!authorized(req.get('authorization'))) return void res.status(401).json({ error: { message: 'bad key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }],
    });
    if (!req.body.stream) {
      res.json({ id: 'chatcmpl-fake', object: 'chat.completion', created: 0, model, choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }] });
      return;
    }
    res.setHeader('content-type', 'text/event-stream');
    res.write(': keep-alive comment\r\n\r\n');
    res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: '' }))}\n\n`);
    for (const w of words) res.write(`event: message\ndata: ${JSON.stringify(chunk({ content: w }))}\n\n`);
    res.write(`data: ${JSON.stringify(chunk({}, 'stop'))}\n\n`);
    res.write('data: [DONE]\n\n');
    res.write(`data: ${JSON.stringify(chunk({ content: 'after done' }))}\n\n`);
    res.end();
  });
  const http = await new Promise<Server>((resolve) => {
    const h = app.listen(0, '127.0.0.1', () => resolve(h));
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    requests,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
