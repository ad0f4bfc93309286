/**
 * Both ends of the function link (lib/function-link.ts) for tests, on loopback ports:
 *
 *   const fn = await startFunctionServer(app);              // the real app-function server (HTTP + link)
 *   const fake = await scriptedLinkFunction();              // a function that takes the link and lets the test answer
 *   const gw = await linkGateway(links, fn.url);            // POST /x -> forward() over the link (HTTP without one)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import { buildFunctionServer } from '../../functions/runtime/server.js';
import type { App, GraphDispatcher } from '../../functions/sdk/index.js';
import { FrameReader, writeFrame } from '../../lib/frames.js';
import { SWITCHING, type ToFunction, type ToGateway } from '../../lib/function-link.js';
import { FunctionLinks } from '../../control/gateway/function-link.js';
import { forward, keepAliveAgent } from '../../control/gateway/proxy.js';
import { listen, type ListeningServer } from '../../lib/listen.js';
import { logger } from '../../lib/log.js';

export const silentLog = () => logger('test').child({}, { level: 'silent' });

/** For apps that call no tasks. */
export const noDispatch: GraphDispatcher = { dispatch: () => Promise.reject(new Error('these apps call no tasks')) };

async function listenLoopback(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The app-function server for `app`, listening; `upgrades` counts the links it accepted. */
export async function startFunctionServer(app: App): Promise<{ url: string; upgrades: () => number; close: () => void }> {
  const server = buildFunctionServer({ app, appId: 'app-test', dispatcher: noDispatch, log: silentLog() });
  let upgrades = 0;
  server.on('upgrade', () => upgrades++);
  const sockets = new Set<Socket>();
  server.on('upgrade', (_req, socket: Socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));
  const url = await listenLoopback(server);
  return { url, upgrades: () => upgrades, close: () => { sockets.forEach((s) => s.destroy()); server.close(); server.closeAllConnections(); } };
}

/** A function that takes the link and hands every frame to the test, which answers with `send` (or drops `socket`). */
export interface ScriptedFunction {
  url: string;
  /** Every frame received, in order. */
  frames: ToFunction[];
  /** Resolves with the next frame of kind `t`. */
  next<K extends ToFunction['t']>(t: K): Promise<Extract<ToFunction, { t: K }>>;
  send(header: ToGateway, payload?: string): void;
  /** The link's socket (the last one accepted). */
  socket(): Socket;
  close(): void;
}

export async function scriptedLinkFunction(): Promise<ScriptedFunction> {
  const frames: ToFunction[] = [];
  const waiting: Array<{ t: string; resolve: (f: ToFunction) => void }> = [];
  let seen = 0;
  let sock: Socket | undefined;
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (_req, socket: Socket) => {
    sock = socket;
    socket.write(SWITCHING);
    new FrameReader<ToFunction>(socket, {
      target: () => undefined,
      frame: (h) => {
        frames.push(h);
        const i = waiting.findIndex((w) => w.t === h.t);
        if (i >= 0) waiting.splice(i, 1)[0]!.resolve(h);
      },
      error: () => {},
    });
  });
  const url = await listenLoopback(server);
  return {
    url,
    frames,
    next: (t) => {
      const found = frames.slice(seen).find((f) => f.t === t);
      if (found) {
        seen = frames.indexOf(found) + 1;
        return Promise.resolve(found as never);
      }
      return new Promise((resolve) => waiting.push({ t, resolve: (f) => { seen = frames.indexOf(f) + 1; resolve(f as never); } }));
    },
    send: (header, payload) => void writeFrame(sock!, header, payload === undefined ? undefined : Buffer.from(payload)),
    socket: () => sock!,
    close: () => { sock?.destroy(); server.close(); },
  };
}

/**
 * A gateway-like express app: POST /x forwards its body to the function at `url` over `links` (HTTP when the function
 * does not take the link), with `timeoutMs` as the deadline. The errors handed to onFailure are kept in `failures`.
 */
export async function linkGateway(links: FunctionLinks, url: string, timeoutMs = 30_000): Promise<ListeningServer & { failures: Error[] }> {
  const failures: Error[] = [];
  const agent = keepAliveAgent();
  const app = express();
  app.post('/x', express.raw({ type: () => true }), async (req, res) => {
    const link = await links.get(url);
    await forward(res, {
      link, url: `${url}/invoke`, body: req.body as Buffer, deadline: Date.now() + timeoutMs, agent, what: 'the test function',
      onFailure: (e) => (failures.push(e), e),
    });
  });
  return Object.assign(await listen(app, 0), { failures });
}

export { FunctionLinks };
