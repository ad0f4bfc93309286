/**
 * Geri's engine process (started by the router through EngineProcess; not run by hand):
 *   node --import tsx executors/geri/engine/main.ts --config '<EngineConfig JSON>'
 * Starts the worker thread (the generator model), then serves the router's ZeroMQ link. Fail-stop: a dead
 * worker ends the process with code 1 (the router answers 503 and fails pending requests).
 */
import { z } from 'zod';
import { logger } from '../../../lib/log.js';
import { EngineServer } from '../../common/engine-process.js';
import { WorkerPool } from '../../common/worker-pool.js';
import { CancelFlags } from '../cancel-flags.js';
import { MODALITIES } from '../protocol.js';
import type { GeriWorkerData } from '../worker/worker.js';
import { GeriEngine } from './engine.js';

export const EngineConfig = z.object({
  modelDir: z.string(),
  modality: z.enum(MODALITIES),
  maxBatchSize: z.number().int().positive().optional(),
  executorId: z.string().optional(),
});
export type EngineConfig = z.infer<typeof EngineConfig>;

const i = process.argv.indexOf('--config');
const config = EngineConfig.parse(JSON.parse(process.argv[i + 1] ?? '{}'));
const log = logger('geri-engine', config.executorId ? { executor: config.executorId } : {});

let pool: WorkerPool | undefined;
const server = EngineServer.connect(log, async () => { await pool?.close(1_000); });
const cancelFlags = CancelFlags.create();
const workerData: GeriWorkerData = { modelDir: config.modelDir, cancelFlags: cancelFlags.sab };
try {
  pool = await WorkerPool.start({ script: new URL('../worker/worker.ts', import.meta.url), size: 1, workerData, log });
} catch (e) {
  log.error({ err: (e as Error).message }, 'the worker failed to start');
  process.exit(1);
}
const engine = new GeriEngine(pool, server, { modality: config.modality, cancelFlags, log, ...(config.maxBatchSize ? { maxBatchSize: config.maxBatchSize } : {}) });
server.listen(engine.handlers());
void pool.dead.then((err) => {
  log.error({ err: err.message }, 'the worker died; engine exiting');
  process.exit(1);
});
const stop = async () => {
  engine.close();
  await pool?.close(2_000);
  server.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
await server.ready({ pid: process.pid, modality: config.modality, maxBatchSize: config.maxBatchSize ?? null });
log.info({ modality: config.modality }, 'geri engine ready');
