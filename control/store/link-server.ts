/**
 * serveStoreLink: the `cornserve up` process serves its Store's dispatch methods (link-protocol.ts) on a unix socket,
 * so app functions run task graphs in their own process while every executor lease is counted in this one Store.
 * A malformed line or an unknown method closes that connection (only our own app-function runtime speaks this).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { logger } from '../../lib/log.js';
import type { Store } from '../../lib/store.js';
import { errorBody, LINK_CHANGE_KINDS, LINK_METHODS, lineSplitter, SUBSCRIBE, type LinkCall } from './link-protocol.js';

const log = logger('store-link');
const SERVED = new Set<string>(LINK_METHODS);

export interface StoreLinkServer {
  socketPath: string;
  close(): Promise<void>;
}

function serveConnection(store: Store, socket: Socket): void {
  socket.setEncoding('utf8');
  socket.setNoDelay?.(true);
  let unsubscribe: (() => void) | undefined;
  const send = (line: string) => {
    if (!socket.destroyed) socket.write(line + '\n');
  };
  const onLine = (line: string) => {
    let call: LinkCall;
    try {
      call = JSON.parse(line) as LinkCall;
    } catch {
      log.warn('malformed line on the store link; closing the connection');
      socket.destroy();
      return;
    }
    const { i, m, a } = call;
    if (m === SUBSCRIBE) {
      unsubscribe ??= store.subscribe((c) => LINK_CHANGE_KINDS.has(c.kind) && send(JSON.stringify({ c })));
      send(`{"i":${i}}`);
      return;
    }
    if (typeof i !== 'number' || !SERVED.has(m)) {
      log.warn({ method: m }, 'unknown method on the store link; closing the connection');
      socket.destroy();
      return;
    }
    (store[m] as (...args: unknown[]) => Promise<unknown>)(...(a ?? [])).then(
      (r) => send(r === undefined ? `{"i":${i}}` : JSON.stringify({ i, r })),
      (e: unknown) => send(JSON.stringify({ i, e: errorBody(e) })),
    );
  };
  socket.on('data', lineSplitter(onLine));
  socket.on('error', () => undefined); // a child that died: its close follows
  socket.on('close', () => unsubscribe?.());
}

/** Listens on `socketPath` (a stale file there is removed first). */
export async function serveStoreLink(store: Store, socketPath: string): Promise<StoreLinkServer> {
  rmSync(socketPath, { force: true });
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(store, socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
