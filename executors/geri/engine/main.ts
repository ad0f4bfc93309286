/**
 * Geri's engine process (started by the router through EngineProcess; not run by hand):
 *   node --import tsx executors/geri/engine/main.ts --config '<EngineConfig JSON>'
 * Starts the worker thread (the generator model; one device, no tensor parallelism), then serves the
 * router's ZeroMQ link (executors/common/engine-main.ts: fail-stop on a dead worker).
 */
import { z } from 'zod';
import { logger } from '../../../lib/log.js';
import { runEngineProcess } from '../../common/engine-main.js';
import { CancelFlags } from '../cancel-flags.js';
import { MODALITIES } from '../../../lib/geri-protocol.js';
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
const cancelFlags = CancelFlags.create();
const workerData: GeriWorkerData = { modelDir: config.modelDir, cancelFlags: cancelFlags.sab };

await runEngineProcess({
  log,
  pool: { script: new URL('../worker/worker.ts', import.meta.url), size: 1, workerData },
  engine: (pool, server) => new GeriEngine(pool, server, {
    modality: config.modality, cancelFlags, log, ...(config.maxBatchSize ? { maxBatchSize: config.maxBatchSize } : {}),
  }),
  info: { modality: config.modality, maxBatchSize: config.maxBatchSize ?? null },
});
