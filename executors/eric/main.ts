/**
 * Eric, the multimodal encoder server:
 *   node --import tsx executors/eric/main.ts --model-id cornserve/tiny-vlm-a --modality image [--tp-size 2] ...
 * Environment (from the platform, see lib/descriptor.ts EXECUTOR_ENV): PORT, HOST, CORNSERVE_SIDECAR_RANKS,
 * CORNSERVE_SIDECAR_URL, CORNSERVE_EXECUTOR_ID, CORNSERVE_ALLOW_PRIVATE_URLS, OTEL_* (spans exported when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set);
 * flags win over the environment.
 */
import { Command, InvalidArgumentError } from 'commander';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { logger } from '../../lib/log.js';
import { privateAllowlistFromEnv } from '../../lib/fetch-guard.js';
import { ALLOW_CPU_FALLBACK_FLAG, startExecutionOrExit } from '../models/execution.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { MODALITIES, compileEricOptions, type EricModality } from './options.js';
import { startEric } from './router/server.js';

const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`not a non-negative integer: ${v}`);
  return n;
};
const list = (v: string, acc: string[] = []) => [...acc, ...v.split(',').map((s) => s.trim()).filter(Boolean)];
const ranks = (v: string) => v.split(',').map((s) => int(s.trim()));
const modality = (v: string) => {
  if (!(MODALITIES as readonly string[]).includes(v.toLowerCase())) throw new InvalidArgumentError(`one of ${MODALITIES.join(', ')}`);
  return v.toLowerCase() as EricModality;
};

const program = new Command('eric')
  .description('Eric: encodes images, videos or audio into embeddings and forwards them to the receivers\' sidecars')
  .requiredOption('--model-id <id>', 'model id whose embeddings this encoder produces')
  .option('--adapter-model-ids <ids>', 'more model ids sharing the encoder (comma-separated or repeated)', list, [] as string[])
  .requiredOption('--modality <modality>', `one of ${MODALITIES.join(', ')}`, modality)
  .option('--tp-size <n>', 'tensor-parallel degree (default: number of sidecar ranks, or 1)', int)
  .option('--max-batch-size <n>', 'items per batch (default: unlimited)', int)
  .option('--models-dir <dir>', 'model folders (default: $CORNSERVE_MODELS_DIR or <repo>/.models)')
  .option('--allow-file-urls', 'accept file: URLs', false)
  .option('--url-allowlist <hosts>', 'hosts http(s) URLs may use (comma-separated; *.domain for sub-domains)', list, [] as string[])
  .option('--allow-private-urls <list>', 'CIDRs, addresses or hosts http(s) URLs may reach although loopback, private, link-local or metadata (comma-separated; default: $CORNSERVE_ALLOW_PRIVATE_URLS, else none)', list)
  .option('--sidecar-ranks <ranks>', `sidecar ranks (default: $${EXECUTOR_ENV.ranks})`, ranks)
  .option('--sidecar <address>', `node sidecar: socket path or http URL (default: $${EXECUTOR_ENV.sidecar})`)
  .option('--host <host>', 'address to bind (default: $HOST or 127.0.0.1)')
  .option('--port <port>', `HTTP port (default: $${EXECUTOR_ENV.port} or 8000)`, int)
  .option('--preprocess-threads <n>', 'preprocessing threads', int, 2)
  .option('--max-input-bytes <n>', 'largest input per item, in bytes', int)
  .option('--fetch-timeout-ms <ms>', 'time limit of one http(s) fetch', int)
  .option('--max-inflight-batches <n>', 'batches handed to the workers at once', int)
  .option(...ALLOW_CPU_FALLBACK_FLAG)
  .parse();

const f = program.opts<{
  allowCpuFallback?: boolean;
  modelId: string; adapterModelIds: string[]; modality: EricModality; tpSize?: number; maxBatchSize?: number; modelsDir?: string;
  allowFileUrls: boolean; urlAllowlist: string[]; allowPrivateUrls?: string[]; sidecarRanks?: number[]; sidecar?: string; host?: string; port?: number;
  preprocessThreads: number; maxInputBytes?: number; fetchTimeoutMs?: number; maxInflightBatches?: number;
}>();
const env = process.env;
const log = logger('eric');
const envRanks = env[EXECUTOR_ENV.ranks] ? ranks(env[EXECUTOR_ENV.ranks]!) : undefined;
const sidecar = f.sidecar ?? env[EXECUTOR_ENV.sidecar];
const executorId = env[EXECUTOR_ENV.executorId];
const opt = <K extends string, V>(k: K, v: V | undefined) => (v === undefined ? {} : { [k]: v } as Record<K, V>);

await startExecutionOrExit(f.allowCpuFallback);
try {
  const options = compileEricOptions({
    modelId: f.modelId, adapterModelIds: f.adapterModelIds, modality: f.modality, allowFileUrls: f.allowFileUrls, urlAllowlist: f.urlAllowlist,
    privateUrlAllowlist: f.allowPrivateUrls ?? privateAllowlistFromEnv(),
    host: f.host ?? env.HOST ?? '127.0.0.1', port: f.port ?? Number(env[EXECUTOR_ENV.port] ?? 8000), preprocessThreads: f.preprocessThreads,
    ...opt('tpSize', f.tpSize), ...opt('maxBatchSize', f.maxBatchSize), ...opt('modelsDir', f.modelsDir), ...opt('ranks', f.sidecarRanks ?? envRanks),
    ...opt('sidecar', sidecar), ...opt('maxInputBytes', f.maxInputBytes), ...opt('fetchTimeoutMs', f.fetchTimeoutMs),
    ...opt('maxInflightBatches', f.maxInflightBatches), ...opt('executorId', executorId),
  });
  await startTelemetry('eric');
  const eric = await startEric(options);
  exitOnSignal(async (sig) => {
    log.info({ sig }, 'stopping');
    await eric.close();
  });
} catch (e) {
  log.error({ err: (e as Error).message }, 'eric failed to start');
  process.exit(1);
}
