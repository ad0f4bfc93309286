/**
 * A real redis-server for tests: started on a free loopback port, stopped afterwards.
 * `make test` installs Debian's redis-server when it is missing; tests never skip the Redis path.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/net.js';
import { waitUntil } from '../../lib/wait.js';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGTERM, nothing saved) and waits for it to exit. */
  stop(): Promise<void>;
  /** Stops and starts it again on the same port (all data is lost, unless it was started persistent). */
  restart(): Promise<void>;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => s.write('PING\r\n'));
    s.once('data', (d) => { s.destroy(); resolve(d.toString().startsWith('+PONG')); });
    s.once('error', () => resolve(false));
  });
}

/** `persistent`: an append-only file in a scratch folder (removed at exit), so restart() brings the data back. */
export async function startRedis(o: { persistent?: boolean } = {}): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const dir = o.persistent ? await mkdtemp(join(tmpdir(), 'cs-redis-')) : undefined;
  const persistence = dir ? ['--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const launch = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence], {
      stdio: 'ignore',
    });
    child.unref();
    await waitUntil(`redis-server on port ${port}`, () => ping(port), { timeoutMs: 30_000 });
  };
  const stop = async () => {
    const c = child;
    // Killed from outside (a chaos run's SIGKILL): exitCode stays null and signalCode is set; 'exit' has fired already.
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.ref(); // the child is unref'd while running; without this an otherwise idle test process exits before 'exit' arrives
    c.kill('SIGTERM');
    await exited;
  };
  await launch();
  process.once('exit', () => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return { port, url: `redis://127.0.0.1:${port}`, stop, restart: async () => { await stop(); await launch(); } };
}
