/**
 * Entry point of the LLM executor process.
 *
 *   node --import tsx executors/llm/main.ts --model-id cornserve/tiny-vlm-a [--port 8000] [--sidecar-socket PATH]
 *
 * The platform passes PORT, CORNSERVE_EXECUTOR_ID, CORNSERVE_SIDECAR_RANKS and CORNSERVE_SIDECAR_URL (a socket
 * path, `unix:<path>`, or the sidecar's http URL whose /info names its socket) in the environment; flags win.
 */
import { Command, InvalidArgumentError } from 'commander';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { privateAllowlistFromEnv, validatePrivateAllowlist } from '../../lib/fetch-guard.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { ALLOW_CPU_FALLBACK_FLAG, startExecutionOrExit } from '../models/execution.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { connectSidecar } from '../common/sidecar-address.js';
import { resolveModelFolder } from '../models/catalog.js';
import { DTYPE_SUFFIX, type HfDtype } from '../models/hf-folder.js';
import { InProcessEncoders } from './encoders.js';
import { LlmModel } from './model.js';
import { buildLlmServer } from './server.js';

const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a non-negative integer: ${v}`);
  return n;
};

const dtype = (v: string): HfDtype => {
  if (!(v in DTYPE_SUFFIX)) throw new InvalidArgumentError(`one of ${Object.keys(DTYPE_SUFFIX).join(', ')}`);
  return v as HfDtype;
};

const program = new Command('llm-executor')
  .description('LLM executor: OpenAI-compatible chat completions over an ONNX decoder with continuous batching')
  .option('--model-id <id>', 'model id to serve: a folder path, a folder name under $CORNSERVE_MODELS, or a built-in model id', 'cornserve/tiny-vlm-a')
  .option('--model-dir <dir>', 'serve this model folder instead of looking the model id up')
  .option('--models-dir <dir>', 'where the built-in model folders live (default: $CORNSERVE_MODELS_DIR or <repo>/.models)')
  .option('--port <port>', 'HTTP port (default: $PORT or 8000)', int)
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--max-batch <n>', 'sequences decoded together at most', int, 32)
  .option('--max-waiting <n>', 'requests waiting at most before 503', int, 1024)
  .option('--max-prefill-tokens <n>', 'padded prompt tokens per prefill call', int, 4096)
  .option('--tp-size <n>', 'tensor-parallel ranks the decoder steps run over (the model needs shards of this degree; one device each)', int, 1)
  .option('--threads <n>', 'onnxruntime intra-op threads (0 = one per core)', int, 0)
  .option('--dtype <dtype>', `a Hugging Face folder's ONNX variant: ${Object.keys(DTYPE_SUFFIX).join(', ')} (onnx/model_fp16.onnx for fp16, as transformers.js names them)`, dtype, 'fp32')
  .option('--sidecar-socket <address>', 'the node sidecar: socket path, unix:<path> or http URL (default: $CORNSERVE_SIDECAR_URL)')
  .option('--sidecar-ranks <ranks>', 'this executor\'s sidecar ranks, comma-separated (default: $CORNSERVE_SIDECAR_RANKS)')
  .option('--no-receive-embeddings', 'do not receive multimodal embeddings from the sidecar (encoder fission off)')
  .option('--encoders', 'run the model\'s encoders in this process: plain image / video / audio URLs are encoded here (encoder fission off)', false)
  .option('--url-allowlist <hosts>', 'with --encoders: hosts http(s) media URLs may point to, comma-separated (default: any)')
  .option('--allow-private-urls <list>', 'with --encoders: CIDRs, addresses or hosts media URLs may reach although loopback, private, link-local or metadata (comma-separated; default: $CORNSERVE_ALLOW_PRIVATE_URLS, else none)')
  .option('--timeout-ms <ms>', 'deadline of requests without an x-cornserve-deadline header', int, 300_000)
  .option(...ALLOW_CPU_FALLBACK_FLAG)
  .parse();

const o = program.opts<{
  allowCpuFallback?: boolean;
  modelId: string; modelDir?: string; modelsDir?: string; port?: number; host: string; maxBatch: number; maxWaiting: number;
  maxPrefillTokens: number; tpSize: number; threads: number; dtype: HfDtype; sidecarSocket?: string; sidecarRanks?: string; receiveEmbeddings: boolean; encoders: boolean; urlAllowlist?: string; allowPrivateUrls?: string; timeoutMs: number;
}>();
const executorId = process.env[EXECUTOR_ENV.executorId];
const log = logger('llm', { executor: executorId });
await startExecutionOrExit(o.allowCpuFallback);
await startTelemetry('llm');

// The model id names a folder path, a folder under $CORNSERVE_MODELS, or a built-in model (catalog.ts).
const dir = o.modelDir ?? (await resolveModelFolder(o.modelId, { modality: 'text', family: 'llm', ...(o.modelsDir ? { builtinDir: o.modelsDir } : {}) }));
const model = await LlmModel.load(dir, { modelId: o.modelId, dtype: o.dtype, ...(o.threads ? { threads: o.threads } : {}), ...(o.tpSize > 1 ? { tensorParallel: o.tpSize } : {}) });
const encoders = o.encoders
  ? await InProcessEncoders.load(model.modelIds.includes(o.modelId) ? o.modelId : model.modelIds[0]!, model.modalities, {
    ...(o.modelsDir ? { modelsDir: o.modelsDir } : {}),
    loader: {
      ...(o.urlAllowlist ? { allowHosts: o.urlAllowlist.split(',').filter(Boolean) } : {}),
      allowPrivate: validatePrivateAllowlist(o.allowPrivateUrls ? o.allowPrivateUrls.split(',').filter(Boolean) : privateAllowlistFromEnv()),
    },
  })
  : undefined;
const ranks = (o.sidecarRanks ?? process.env[EXECUTOR_ENV.ranks] ?? '').split(',').filter(Boolean).map(int);
const { socket, sidecar } = await connectSidecar(o.sidecarSocket ?? process.env[EXECUTOR_ENV.sidecar], ranks, model.config.hidden * 4);
const server = buildLlmServer({
  model, ...(sidecar ? { sidecar } : {}), receiveEmbeddings: o.receiveEmbeddings, ...(encoders ? { encoders } : {}), ...(executorId ? { executorId } : {}),
  engine: { maxBatch: o.maxBatch, maxWaiting: o.maxWaiting, maxPrefillTokens: o.maxPrefillTokens }, defaultTimeoutMs: o.timeoutMs, log,
});
const port = o.port ?? Number(process.env[EXECUTOR_ENV.port] ?? 8000);
const http = server.app.listen(port, o.host, () => {
  log.info({ port, model: model.name, modelIds: model.modelIds, sidecar: socket ?? null, encoders: encoders?.modalities ?? [] }, 'llm executor listening');
});
http.keepAliveTimeout = 65_000;
exitOnSignal(http, () => server.close().then(() => Promise.all([model.close(), encoders?.close()])).finally(() => sidecar?.close()));
