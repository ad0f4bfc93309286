/** Entry point of the echo executor process. */
import { Command } from 'commander';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startTelemetry } from '../../lib/telemetry.js';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { buildEchoServer } from './server.js';

const program = new Command('echo-executor')
  .description('Echo executor: answers POST /echo with its input (platform-overhead tests and benchmarks)')
  .option('--port <port>', 'HTTP port (default: $PORT or 8000)')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--service-time-ms <ms>', 'default simulated work per request', '0')
  .option('--max-concurrency <n>', 'requests served at once; the rest queue in FIFO order (default: no limit)')
  .parse();
const opts = program.opts<{ port?: string; host: string; serviceTimeMs: string; maxConcurrency?: string }>();
const maxConcurrency = opts.maxConcurrency === undefined ? undefined : Number(opts.maxConcurrency);
if (maxConcurrency !== undefined && !(Number.isInteger(maxConcurrency) && maxConcurrency > 0)) program.error(`--max-concurrency must be a positive integer, got ${opts.maxConcurrency}`);
const port = Number(opts.port ?? process.env[EXECUTOR_ENV.port] ?? 8000);
const executorId = process.env[EXECUTOR_ENV.executorId];
const log = logger('echo', { executor: executorId });
await startTelemetry('echo');

const server = buildEchoServer({ ...(executorId ? { executorId } : {}), serviceTimeMs: Number(opts.serviceTimeMs), ...(maxConcurrency ? { maxConcurrency } : {}) }).listen(port, opts.host, () => {
  log.info({ port, maxConcurrency: maxConcurrency ?? null }, 'echo executor listening');
});
server.keepAliveTimeout = 65_000;
exitOnSignal(server);
