/**
 * Starts Eric's router process parts: finds the model folder, starts the preprocessing pool and the engine
 * process (which starts the workers), connects the router's own sidecar client (used only to fail ids of
 * failed requests), builds the HTTP app and listens. `close()` stops everything it started.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { logger } from '../../../lib/log.js';
import { EngineProcess } from '../../common/engine-process.js';
import { PreprocessPool } from '../../common/preprocess-pool.js';
import { resolveSidecarSocket } from '../../common/sidecar-address.js';
import type { EngineConfig } from '../engine/main.js';
import { createEricMetrics } from '../metrics.js';
import { findEncoder } from '../model.js';
import type { CompiledEricOptions } from '../options.js';
import { buildEricApp } from './app.js';
import type { Forward } from './embeddings.js';
import type { PreprocessInput, PreprocessOutput, PreprocessSettings } from './preprocess-worker.js';

export interface RunningEric {
  url: string;
  port: number;
  enginePid: number | undefined;
  close(): Promise<void>;
}

const ENGINE_MAIN = fileURLToPath(new URL('../engine/main.ts', import.meta.url));
const PREPROCESS_WORKER = new URL('./preprocess-worker.ts', import.meta.url);

export async function startEric(o: CompiledEricOptions): Promise<RunningEric> {
  const log = logger('eric', o.executorId ? { executor: o.executorId } : {});
  const { dir, manifest } = await findEncoder(o.modelIds, o.modality, o.tpSize, o.modelsDir);
  const sidecarSocket = o.sidecar ? await resolveSidecarSocket(o.sidecar) : undefined;

  const stops: (() => Promise<void> | void)[] = [];
  const close = async () => { for (const s of stops.splice(0).reverse()) await s(); };
  try {
    const settings: PreprocessSettings = { preprocessing: manifest.preprocessing, maxFrames: o.maxVideoFrames };
    const preprocess = await PreprocessPool.start<PreprocessInput, PreprocessOutput>({ script: PREPROCESS_WORKER, size: o.preprocessThreads, workerData: settings, log });
    stops.push(() => preprocess.close());

    const config: EngineConfig = {
      modelDir: dir, modality: o.modality, modelIds: [...o.modelIds], ranks: [...o.ranks], maxInflightBatches: o.maxInflightBatches,
      ...(sidecarSocket ? { sidecarSocket } : {}), ...(o.maxBatchSize ? { maxBatchSize: o.maxBatchSize } : {}), ...(o.executorId ? { executorId: o.executorId } : {}),
    };
    const { engine } = await EngineProcess.start({ entry: ENGINE_MAIN, args: ['--config', JSON.stringify(config)], log });
    stops.push(() => engine.stop());

    let sidecar: Promise<SidecarClient> | undefined;
    const failForwards = sidecarSocket
      ? async (forwards: Forward[], reason: string) => {
          sidecar ??= SidecarClient.connect({ rank: o.ranks[0]!, group: [...o.ranks], socketPath: sidecarSocket, timeoutMs: 10_000 });
          const sc = await sidecar;
          await Promise.all(forwards.map((f) => sc.fail(f.id, reason, f.receivers).catch((e: Error) => log.warn({ id: f.id, err: e.message }, 'cannot fail id on the sidecar'))));
        }
      : undefined;
    stops.push(async () => { (await sidecar?.catch(() => undefined))?.close(); });

    const inflight = { n: 0 };
    const metrics = createEricMetrics({ modality: o.modality, ...(o.executorId ? { executor: o.executorId } : {}) }, { inflight: () => inflight.n, queued: () => preprocess.queued });
    const modalities = manifest.modalities.filter((m) => m !== 'text');
    const info = () => ({
      kind: 'eric', executorId: o.executorId ?? null, modelId: o.modelId, adapterModelIds: o.adapterModelIds, modality: o.modality,
      model: { name: manifest.name, dir, hidden: Object.fromEntries(o.modelIds.map((id) => [id, manifest.model_ids[id]!.hidden_size])) },
      tpSize: o.tpSize, maxBatchSize: o.maxBatchSize ?? null, sidecarRanks: o.ranks, sidecar: sidecarSocket ?? null,
      engine: { pid: engine.pid ?? null, alive: engine.alive }, inflight: inflight.n,
    });
    const app = buildEricApp({
      options: o, engine: engine.client, preprocess, metrics, log, inflight, info, modalities, engineHealth: engine.health,
      ...(failForwards ? { failForwards } : {}),
    });
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(o.port, o.host, (err?: Error) => (err ? reject(err) : resolve(s)));
    });
    server.keepAliveTimeout = 65_000;
    stops.push(() => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }));
    const port = (server.address() as AddressInfo).port;
    log.info({ port, model: manifest.name, modality: o.modality, workers: o.tpSize }, 'eric listening');
    return { url: `http://${o.host}:${port}`, port, enginePid: engine.pid, close };
  } catch (e) {
    await close();
    throw e;
  }
}
