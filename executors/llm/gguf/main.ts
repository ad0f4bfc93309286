/**
 * Entry point of the GGUF LLM executor (llama.cpp through node-llama-cpp; the `llama-cpp` LLM descriptor).
 *
 *   node --import tsx executors/llm/gguf/main.ts --model-id tiny-llama-gguf [--port 8000] [--gpu auto|cpu|cuda|vulkan]
 *
 * The model id names a `.gguf` file, or a folder holding one, as a path or under the model directories
 * ($CORNSERVE_MODELS, then the built-in models). A file that cannot be served (truncated, unknown
 * architecture, larger than --memory-mb, a GPU binary that does not load) ends the process with exit code 1
 * and one line `GGUF_…: why` on stderr.
 */
import { freemem } from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { EXECUTOR_ENV } from '../../../lib/descriptor.js';
import { logger } from '../../../lib/log.js';
import { exitOnSignal } from '../../../lib/shutdown.js';
import { startTelemetry } from '../../../lib/telemetry.js';
import { defaultModelsDir, modelDirs } from '../../models/catalog.js';
import { ggufBinaryOrder } from '../../../policies/gguf-binary.js';
import { GGUF_GPUS, GgufError, loadFirstLlama, loadGguf, resolveGguf, type GgufGpu } from './model.js';
import { buildGgufServer } from './server.js';

const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`not a non-negative integer: ${v}`);
  return n;
};
const gpuChoice = (v: string) => {
  if (v !== 'auto' && !(GGUF_GPUS as readonly string[]).includes(v)) throw new InvalidArgumentError(`one of auto, ${GGUF_GPUS.join(', ')}`);
  return v as GgufGpu | 'auto';
};

const program = new Command('llm-gguf-executor')
  .description('GGUF LLM executor: OpenAI-compatible chat completions on llama.cpp (node-llama-cpp) with continuous batching over the sequences of one context')
  .requiredOption('--model-id <id>', 'a .gguf file or a folder holding one: a path, or a name under $CORNSERVE_MODELS or the built-in models')
  .option('--models-dir <dir>', 'where the built-in models live (default: $CORNSERVE_MODELS_DIR or <repo>/.models)')
  .option('--port <port>', 'HTTP port (default: $PORT or 8000)', int)
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--max-batch <n>', 'sequences generated together at most (sequences of the one llama.cpp context)', int, 8)
  .option('--context-size <n>', 'tokens per sequence (prompt + answer); at most the model\'s trained context', int, 2048)
  .option('--max-waiting <n>', 'requests waiting at most before 503', int, 1024)
  .option('--memory-mb <n>', 'memory this executor may use: a model + context estimated above it is refused at start (default: the free memory now)', int)
  .option('--gpu <kind>', `llama.cpp binary: auto (with CUDA devices assigned: cuda, else vulkan when cuda does not load; else cpu), ${GGUF_GPUS.join(', ')}`, gpuChoice, 'auto')
  .option('--threads <n>', 'llama.cpp threads per decode (0 = one per core). ggml\'s threads spin while they wait: on a shared node more than one costs more than it brings', int, 1)
  .option('--timeout-ms <ms>', 'deadline of requests without an x-cornserve-deadline header', int, 300_000)
  .parse();

const o = program.opts<{
  modelId: string; modelsDir?: string; port?: number; host: string; maxBatch: number; contextSize: number; maxWaiting: number;
  memoryMb?: number; gpu: GgufGpu | 'auto'; threads: number; timeoutMs: number;
}>();
const executorId = process.env[EXECUTOR_ENV.executorId];
const log = logger('llm-gguf', { executor: executorId });
await startTelemetry('llm-gguf');

const devices = (process.env[EXECUTOR_ENV.deviceOrdinals] ?? '').split(',').filter(Boolean).map(Number);
let loaded;
let gpu: GgufGpu;
try {
  const path = await resolveGguf(o.modelId, [...modelDirs(), o.modelsDir ?? defaultModelsDir()]);
  const chosen = await loadFirstLlama(ggufBinaryOrder(o.gpu, process.env[EXECUTOR_ENV.deviceKind]), devices, log);
  gpu = chosen.gpu;
  const llama = chosen.llama;
  loaded = await loadGguf(llama, path, {
    contextSize: Math.max(1, o.contextSize), sequences: Math.max(1, o.maxBatch), memoryLimitBytes: (o.memoryMb ?? Math.floor(freemem() / 2 ** 20)) * 2 ** 20,
    threads: o.threads,
  });
} catch (e) {
  if (!(e instanceof GgufError)) throw e;
  log.error({ code: e.code }, e.message);
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
}
const server = buildGgufServer({
  loaded, modelIds: [o.modelId], gpu, device: gpu === 'cpu' ? 'cpu' : `${gpu}:${devices.join(',')}`, maxWaiting: o.maxWaiting, defaultTimeoutMs: o.timeoutMs, log, ...(executorId ? { executorId } : {}),
});
const port = o.port ?? Number(process.env[EXECUTOR_ENV.port] ?? 8000);
const http = server.app.listen(port, o.host, () => {
  log.info({ port, model: o.modelId, file: loaded.path, gpu, architecture: loaded.check.architecture, sequences: o.maxBatch, contextSize: loaded.contextSize }, 'gguf llm executor listening');
});
http.keepAliveTimeout = 65_000;
exitOnSignal(http, () => server.close().then(() => loaded.close()));
