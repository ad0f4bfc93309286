import { createServer } from 'node:net';

/** A free TCP port on loopback, chosen by the kernel. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') return reject(new Error('no port'));
      srv.close(() => resolve(addr.port));
    });
  });
}

/** Resolves once `port` could be bound on `host` (and is released again); rejects with the bind error (EADDRINUSE) otherwise. */
export function checkPortFree(port: number, host = '127.0.0.1'): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(port, host, () => srv.close(() => resolve()));
  });
}

/** Whether `port` can be bound on `host` now. */
export function canListen(host: string, port: number): Promise<boolean> {
  return checkPortFree(port, host).then(() => true, () => false);
}
