/**
 * A stand-in gateway for `cornserve bench` tests: a real HTTP server on a free loopback port that lists one ready app
 * (`/app/list`, `/tasks/list`, as the bench's preflight reads them) and hands each POST /app/invoke/<app> to `invoke`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = (status: number, body: unknown) => void;

export async function startBenchGateway(app: string, invoke: (req: IncomingMessage, reply: Reply) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res: ServerResponse) => {
    const json: Reply = (status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (req.method === 'GET' && req.url?.startsWith('/app/list')) return json(200, [{ app_id: 'app-1', name: app, aliases: [], state: 'ready', task_ids: [] }]);
    if (req.method === 'GET' && req.url === '/tasks/list') return json(200, []);
    if (req.method === 'POST' && req.url?.startsWith(`/app/invoke/${app}`)) return invoke(req, json);
    json(404, { error: { code: 'NOT_FOUND', message: req.url } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
