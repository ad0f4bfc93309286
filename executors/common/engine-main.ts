/**
 * The body of an engine process's main (the process EngineProcess.start spawns): connect to the router,
 * start the worker pool, build the executor's engine loop on both, serve the router's link, and report
 * ready. Fail-stop: workers that cannot start, or a worker that dies later, end the process with code 1 (the
 * router answers 503 and fails pending requests). SIGTERM / SIGINT / the router going away stop it cleanly.
 *
 *   await runEngineProcess({
 *     log, pool: { script: new URL('../worker/worker.ts', import.meta.url), size: 1, workerData },
 *     engine: (pool, server) => new MyEngine(pool, server, options), info: { modality },
 *   });
 */
import type { Logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { EngineServer } from './engine-process.js';
import type { EngineWork, Handlers } from '../../lib/executor-protocol.js';
import { WorkerPool, type WorkerPoolOptions } from './worker-pool.js';

/** What an executor's engine loop offers the process: the link's handlers and a way to stop its timers. */
export interface EngineLoop {
  handlers(): Handlers<EngineWork>;
  close(): void;
}

export interface EngineProcessMain {
  log: Logger;
  pool: Omit<WorkerPoolOptions, 'log'>;
  engine: (pool: WorkerPool, server: EngineServer) => EngineLoop;
  /** Sent to the router with `ready` (the pid is added). */
  info?: Record<string, unknown>;
}

export async function runEngineProcess(o: EngineProcessMain): Promise<void> {
  const { log } = o;
  await startTelemetry(`${process.env.CORNSERVE_EXECUTOR_ID ?? 'executor'}-engine`);
  let pool: WorkerPool | undefined;
  const server = EngineServer.connect(log, async () => { await pool?.close(1_000); });
  try {
    pool = await WorkerPool.start({ ...o.pool, log });
  } catch (e) {
    log.error({ err: (e as Error).message }, 'workers failed to start');
    process.exit(1);
  }
  const engine = o.engine(pool, server);
  server.listen(engine.handlers());
  void pool.dead.then((err) => {
    log.error({ err: err.message }, 'a worker died; engine exiting');
    process.exit(1);
  });
  exitOnSignal(async () => {
    engine.close();
    await pool?.close(2_000);
    server.close();
  });
  await server.ready({ pid: process.pid, ...o.info });
  log.info(o.info ?? {}, 'engine ready');
}
