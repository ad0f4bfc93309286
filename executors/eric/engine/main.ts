/**
 * Eric's engine process (started by the router through EngineProcess; not run by hand):
 *   node --import tsx executors/eric/engine/main.ts --config '<EngineConfig JSON>'
 * Starts one worker thread per rank, then serves the router's ZeroMQ link. Fail-stop: a dead worker ends
 * the process with code 1 (the router answers 503 and fails pending requests).
 */
import { z } from 'zod';
import { logger } from '../../../lib/log.js';
import { EngineServer } from '../../common/engine-process.js';
import { WorkerPool } from '../../common/worker-pool.js';
import type { EricWorkerData } from '../worker/worker.js';
import { EricEngine } from './engine.js';

export const EngineConfig = z.object({
  modelDir: z.string(),
  modelIds: z.array(z.string()).min(1),
  modality: z.enum(['image', 'video', 'audio']),
  ranks: z.array(z.number().int().nonnegative()).min(1),
  sidecarSocket: z.string().optional(),
  maxBatchSize: z.number().int().positive().optional(),
  maxInflightBatches: z.number().int().positive().optional(),
  executorId: z.string().optional(),
});
export type EngineConfig = z.infer<typeof EngineConfig>;

const i = process.argv.indexOf('--config');
const config = EngineConfig.parse(JSON.parse(process.argv[i + 1] ?? '{}'));
const log = logger('eric-engine', config.executorId ? { executor: config.executorId } : {});

let pool: WorkerPool | undefined;
const server = EngineServer.connect(log, async () => { await pool?.close(1_000); });
const workerData: EricWorkerData = {
  modelDir: config.modelDir, modality: config.modality, modelIds: config.modelIds, ranks: config.ranks, ...(config.sidecarSocket ? { sidecarSocket: config.sidecarSocket } : {}),
};
try {
  pool = await WorkerPool.start({ script: new URL('../worker/worker.ts', import.meta.url), size: config.ranks.length, workerData, log });
} catch (e) {
  log.error({ err: (e as Error).message }, 'workers failed to start');
  process.exit(1);
}
const engine = new EricEngine(pool, server, {
  log, ...(config.maxBatchSize ? { maxBatchSize: config.maxBatchSize } : {}),
  ...(config.maxInflightBatches ? { maxInflightBatches: config.maxInflightBatches } : {}),
});
server.listen(engine.handlers());
void pool.dead.then((err) => {
  log.error({ err: err.message }, 'a worker died; engine exiting');
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
await server.ready({ pid: process.pid, workers: config.ranks.length });
log.info({ workers: config.ranks.length }, 'eric engine ready');
