/**
 * The dispatcher as its own process: `node --import tsx control/dispatcher/main.ts --port 8100 --redis redis://...`.
 * Stateless: routes come from the Store, so run as many replicas as needed behind one address.
 * Without --redis it uses an in-process MemoryStore, which no task manager can write to: only useful
 * for trying the CLI (embedded `cornserve up` calls startDispatcher() in its own process instead).
 */
import { Command } from 'commander';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createStore } from '../store/index.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startTelemetry, stopTelemetry } from '../../lib/telemetry.js';
import { startDispatcher } from './server.js';
import { TaskRegistry } from '../registry/task-registry.js';

const program = new Command('cornserve-dispatcher')
  .description('Cornserve task dispatcher: receives task graphs (CloudEvents), runs them on executors, streams the outputs back')
  .option('--port <port>', 'HTTP port (default: $PORT, else any free port)')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--redis <url>', 'Redis Store URL (default: $CORNSERVE_STORE_URL; none = in-memory store)')
  .option('--redis-prefix <prefix>', 'key prefix in Redis', 'cornserve:')
  .option('--body-limit <size>', 'largest accepted task graph (default: room for the gateway\'s $CORNSERVE_BODY_LIMIT_BYTES, lib/body-limit.ts)')
  .parse();
const opts = program.opts<{ port?: string; host: string; redis?: string; redisPrefix: string; bodyLimit?: string }>();
const log = logger('dispatcher');

const redisUrl = opts.redis ?? process.env.CORNSERVE_STORE_URL;
if (!redisUrl) log.warn('no --redis given: using an in-memory store that no task manager can reach');
const store = createStore({ ...(redisUrl ? { redisUrl } : {}), prefix: opts.redisPrefix });
await store.ready();
// Registered unit tasks (control/registry): their classes and descriptors, following the Store's changes.
const taskRegistry = new TaskRegistry({ store, log: logger('registry') });
await taskRegistry.start();
await startTelemetry('cornserve-dispatcher');
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const dispatcher = await startDispatcher({ store, registry, host: opts.host, port: Number(opts.port ?? process.env.PORT ?? 0), ...(opts.bodyLimit ? { bodyLimit: opts.bodyLimit } : {}) });
log.info({ url: dispatcher.url }, 'dispatcher listening');

exitOnSignal(async (signal) => {
  log.info({ signal }, 'dispatcher stopping');
  await dispatcher.close();
  await taskRegistry.close();
  await store.close();
  await stopTelemetry();
});
