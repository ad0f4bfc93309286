// An executor the platform has never seen: a plain Node HTTP server (no Cornserve code) that counts words.
// GET /health -> 200; POST /count {"text": "..."} -> {"words": n, "longest": "..."}. Listens on $PORT (loopback).
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 8000);
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') return void res.writeHead(200).end('ok');
  if (req.method !== 'POST' || req.url !== '/count') return void res.writeHead(404).end();
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    let text;
    try {
      text = JSON.parse(body).text;
    } catch {
      return void res.writeHead(400).end('bad JSON');
    }
    const words = String(text).split(/\s+/).filter(Boolean);
    const longest = words.reduce((a, w) => (w.length > a.length ? w : a), '');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ words: words.length, longest }));
  });
});
server.listen(port, '127.0.0.1', () => console.log(`word-count executor listening on ${port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
