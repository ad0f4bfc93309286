/**
 * Entry point of the external-LLM adapter executor (launched by the `external` LLM descriptor).
 *
 *   node --import tsx executors/llm/external-main.ts --upstream http://vllm:8000 [--port 8000]
 *
 * The upstream's API key, if any, comes from CORNSERVE_EXTERNAL_LLM_API_KEY (never from argv).
 */
import { Command } from 'commander';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { buildExternalServer } from './external-server.js';

const program = new Command('llm-external-executor')
  .description('Adapter executor: serves LLMTask through an existing OpenAI-compatible server')
  .requiredOption('--upstream <url>', 'base URL of the OpenAI-compatible server')
  .option('--port <port>', 'HTTP port (default: $PORT or 8000)')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .parse();
const o = program.opts<{ upstream: string; port?: string; host: string }>();
const executorId = process.env[EXECUTOR_ENV.executorId];
const log = logger('llm-external', { executor: executorId });
await startTelemetry('llm-external');
const apiKey = process.env.CORNSERVE_EXTERNAL_LLM_API_KEY;
const app = buildExternalServer({ upstream: o.upstream, ...(apiKey ? { apiKey } : {}), ...(executorId ? { executorId } : {}), log });
const port = Number(o.port ?? process.env[EXECUTOR_ENV.port] ?? 8000);
const http = app.listen(port, o.host, () => log.info({ port, upstream: o.upstream }, 'external llm adapter listening'));
http.keepAliveTimeout = 65_000;
exitOnSignal(http);
