/**
 * Geri, the generator server: router process (HTTP, sidecar receives) + engine process (scheduler) + one
 * worker thread (the ONNX generator).
 *
 *   node --import tsx executors/geri/main.ts --model-id cornserve/tiny-image-gen --modality image [--max-batch-size 4]
 *
 * The platform passes PORT, CORNSERVE_EXECUTOR_ID, CORNSERVE_SIDECAR_RANKS and CORNSERVE_SIDECAR_URL (a socket
 * path, `unix:<path>`, or the sidecar's http URL whose /info names its socket) in the environment; flags win.
 */
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { ALLOW_CPU_FALLBACK_FLAG, startExecutionOrExit } from '../models/execution.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { EngineProcess } from '../common/engine-process.js';
import { connectSidecar } from '../common/sidecar-address.js';
import { findModel } from '../models/catalog.js';
import { loadManifest } from '../models/loader.js';
import type { EngineConfig } from './engine/main.js';
import { MODALITIES, type Modality } from '../../lib/geri-protocol.js';
import { buildGeriServer } from './router/server.js';

const int = (min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer ≥ ${min}, got '${v}'`);
  return n;
};

const program = new Command('geri')
  .description('Geri: generator server (embeddings from the sidecar → images as PNG, or audio as streamed PCM16)')
  .requiredOption('--model-id <id>', 'model id to serve (its folder is found in the models dir), e.g. cornserve/tiny-image-gen')
  .addOption(new Option('--modality <modality>', 'what this Geri generates').choices(MODALITIES).makeOptionMandatory())
  .option('--max-batch-size <n>', 'requests generated together at most (0 = unlimited)', int(0), 1)
  .option('--models-dir <dir>', 'where model folders live (default: $CORNSERVE_MODELS_DIR or <repo>/.models)')
  .option('--model-dir <dir>', 'serve this model folder instead of looking the model id up')
  .option('--port <port>', 'HTTP port (default: $PORT or 8000)', int(0))
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--sidecar-socket <address>', 'the node sidecar: socket path, unix:<path> or http URL (default: $CORNSERVE_SIDECAR_URL)')
  .option('--sidecar-ranks <ranks>', 'this executor\'s sidecar ranks, comma-separated (default: $CORNSERVE_SIDECAR_RANKS)')
  .option('--timeout-ms <ms>', 'deadline of requests without an x-cornserve-deadline header', int(1), 300_000)
  .option(...ALLOW_CPU_FALLBACK_FLAG)
  .parse();

const o = program.opts<{
  allowCpuFallback?: boolean;
  modelId: string; modality: Modality; maxBatchSize: number; modelsDir?: string; modelDir?: string; port?: number; host: string;
  sidecarSocket?: string; sidecarRanks?: string; timeoutMs: number;
}>();
const executorId = process.env[EXECUTOR_ENV.executorId];
const log = logger('geri', { executor: executorId });
await startExecutionOrExit(o.allowCpuFallback);
await startTelemetry('geri');

const dir = o.modelDir ?? (await findModel(o.modelId, o.modality, o.modelsDir)).dir;
const manifest = await loadManifest(dir);
const maxBatchSize = o.maxBatchSize > 0 ? o.maxBatchSize : undefined;
const ranks = (o.sidecarRanks ?? process.env[EXECUTOR_ENV.ranks] ?? '').split(',').filter(Boolean).map(int(0));
const hidden = manifest.model_ids[o.modelId]?.hidden_size ?? 0;
const { socket, sidecar } = await connectSidecar(o.sidecarSocket ?? process.env[EXECUTOR_ENV.sidecar], ranks, hidden * 4);
if (!sidecar) {
  log.warn('no sidecar (CORNSERVE_SIDECAR_URL unset): generation requests will fail with GERI_NO_SIDECAR');
}

const config: EngineConfig = { modelDir: dir, modality: o.modality, ...(maxBatchSize ? { maxBatchSize } : {}), ...(executorId ? { executorId } : {}) };
const { engine } = await EngineProcess.start({
  entry: fileURLToPath(new URL('./engine/main.ts', import.meta.url)), args: ['--config', JSON.stringify(config)], log,
});
const { app } = buildGeriServer({
  engine: { health: engine.health, get pid() { return engine.pid; }, enqueue: (items, opts) => engine.client.enqueue(items, opts) },
  manifest, modelId: o.modelId, modality: o.modality, ...(sidecar ? { sidecar } : {}), ...(maxBatchSize ? { maxBatchSize } : {}),
  ...(executorId ? { executorId } : {}), defaultTimeoutMs: o.timeoutMs, log,
});
const port = o.port ?? Number(process.env[EXECUTOR_ENV.port] ?? 8000);
const http = app.listen(port, o.host, () => {
  log.info({ port, model: manifest.name, modelId: o.modelId, modality: o.modality, maxBatchSize: maxBatchSize ?? null, sidecar: socket ?? null }, 'geri listening');
});
http.keepAliveTimeout = 65_000;

const shutdown = exitOnSignal(http, () => engine.stop(2_000).finally(() => sidecar?.close()));
void engine.exited.then(() => {
  if (!shutdown.stopping) log.error('the engine exited; /health answers 503 until this executor is restarted');
});
