/**
 * Eric's engine process (started by the router through EngineProcess; not run by hand):
 *   node --import tsx executors/eric/engine/main.ts --config '<EngineConfig JSON>'
 * Starts one worker thread per rank (the TP degree), then serves the router's ZeroMQ link
 * (executors/common/engine-main.ts: fail-stop on a dead worker).
 */
import { z } from 'zod';
import { logger } from '../../../lib/log.js';
import { runEngineProcess } from '../../common/engine-main.js';
import { MODALITIES } from '../options.js';
import type { EricWorkerData } from '../worker/worker.js';
import { EricEngine } from './engine.js';

export const EngineConfig = z.object({
  modelDir: z.string(),
  modality: z.enum(MODALITIES),
  modelIds: z.array(z.string()).min(1),
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
const workerData: EricWorkerData = {
  modelDir: config.modelDir, modality: config.modality, modelIds: config.modelIds, ranks: config.ranks,
  ...(config.sidecarSocket ? { sidecarSocket: config.sidecarSocket } : {}),
};

await runEngineProcess({
  log,
  pool: { script: new URL('../worker/worker.ts', import.meta.url), size: config.ranks.length, workerData },
  engine: (pool, server) => new EricEngine(pool, server, {
    log, ...(config.maxBatchSize ? { maxBatchSize: config.maxBatchSize } : {}),
    ...(config.maxInflightBatches ? { maxInflightBatches: config.maxInflightBatches } : {}),
  }),
  info: { workers: config.ranks.length, modality: config.modality },
});
