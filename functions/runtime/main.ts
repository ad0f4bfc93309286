/**
 * Entry point of an app-function process (one per registered app; user code never runs in the gateway).
 *
 *   serve mode (default): CORNSERVE_APP_SOURCE (path of the app's .ts source), CORNSERVE_APP_ID,
 *     CORNSERVE_DISPATCHER_URL (http:// or http+unix://), PORT (default 8000), CORNSERVE_HOST (default 127.0.0.1);
 *     with CORNSERVE_SOCKET_PATH it listens on that unix socket instead of PORT (the local platform's choice).
 *   dispatch (CORNSERVE_DISPATCH): `cloudevent` (default; every graph is a CloudEvent POSTed to the dispatcher
 *     service: Knative, and `up --dispatch cloudevent`) or `in-process` (graph execution runs here, over the shared
 *     Redis Store at CORNSERVE_STORE_URL / CORNSERVE_STORE_PREFIX, or the `up` process's in-memory Store through
 *     its store link at CORNSERVE_STORE_SOCKET: `up` picks it; see dispatch-mode.ts).
 *   check mode: `--check FILE` loads the source, prints one line `CORNSERVE_CHECK <json>` on stdout
 *     (see check.ts) and exits 0 when the app is valid, 1 otherwise. The gateway runs this in a
 *     throwaway process to validate a registration.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { setDefaultDispatcher } from '../sdk/index.js';
import { logger } from '../../lib/log.js';
import { exitOnSignal } from '../../lib/shutdown.js';
import { startTelemetry, stopTelemetry } from '../../lib/telemetry.js';
import { listenUnix } from '../../lib/unix-url.js';
import { checkAppFile, checkTaskFile, CHECK_MARKER } from './check.js';
import { DISPATCH_ENV, openDispatcher } from './dispatch-mode.js';
import { loadAppSource } from './load.js';
import { buildFunctionServer } from './server.js';
import { BODY_LIMIT_ENV, bodyLimitBytes } from '../../lib/body-limit.js';

export const RUNTIME_ENV = {
  source: 'CORNSERVE_APP_SOURCE',
  appId: 'CORNSERVE_APP_ID',
  dispatcherUrl: 'CORNSERVE_DISPATCHER_URL',
  port: 'PORT',
  host: 'CORNSERVE_HOST',
  bodyLimit: BODY_LIMIT_ENV,
  socketPath: 'CORNSERVE_SOCKET_PATH',
  dispatch: DISPATCH_ENV.mode,
  storeUrl: DISPATCH_ENV.storeUrl,
  storePrefix: DISPATCH_ENV.storePrefix,
  storeSocket: DISPATCH_ENV.storeSocket,
} as const;

async function check(file: string, what: 'app' | 'task' = 'app'): Promise<never> {
  const result = what === 'app' ? await checkAppFile(file) : await checkTaskFile(file);
  process.stdout.write(`${CHECK_MARKER} ${JSON.stringify(result)}\n`, () => process.exit(result.ok ? 0 : 1));
  return new Promise<never>(() => {});
}

async function serve(): Promise<void> {
  const env = process.env;
  const sourcePath = env[RUNTIME_ENV.source];
  const appId = env[RUNTIME_ENV.appId] ?? 'app-local';
  const dispatcherUrl = env[RUNTIME_ENV.dispatcherUrl];
  const log = logger('app-function', { appId });
  if (!sourcePath || !dispatcherUrl) {
    log.fatal(`${RUNTIME_ENV.source} and ${RUNTIME_ENV.dispatcherUrl} must be set`);
    process.exit(2);
  }
  // Spans only when something collects them (lib/telemetry); without, the caller's traceparent is passed on unchanged.
  await startTelemetry(`app-function-${appId}`);
  const app = await loadAppSource(await readFile(sourcePath, 'utf8'), sourcePath);
  const { dispatcher, mode, metrics, close: closeDispatcher } = await openDispatcher(env, { appId, dispatcherUrl });
  log.info({ mode }, mode === 'in-process' ? 'task graphs run in this process over the shared store' : 'task graphs go to the dispatcher as CloudEvents');
  setDefaultDispatcher(dispatcher);
  const server = buildFunctionServer({
    app,
    appId,
    dispatcher,
    log,
    bodyLimitBytes: bodyLimitBytes(env),
    ...(metrics ? { metrics } : {}),
  });
  const socketPath = env[RUNTIME_ENV.socketPath];
  if (socketPath) {
    await listenUnix(server, socketPath);
    log.info({ socketPath, app: app.name }, 'app function listening');
  } else {
    const port = Number(env[RUNTIME_ENV.port] ?? 8000);
    server.listen(port, env[RUNTIME_ENV.host] ?? env.HOST ?? '127.0.0.1', () => log.info({ port, app: app.name }, 'app function listening'));
  }
  exitOnSignal(async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    server.drainLinks();
    await closed;
    await closeDispatcher();
    await stopTelemetry();
  }, { timeoutMs: 10_000 });
}

const program = new Command('cornserve-function')
  .description('Cornserve app-function runtime: serves one app (POST /invoke, GET /health, GET /metrics when it dispatches in process), or checks an app source')
  .option('--check <file>', 'load the app source, print what it declares (or its problems) and exit')
  .option('--check-task <file>', 'load a registry file (defineUnitTask), print its unit task definition (or its problems) and exit')
  .parse();
const opts = program.opts<{ check?: string; checkTask?: string }>();
if (opts.check) await check(opts.check);
if (opts.checkTask) await check(opts.checkTask, 'task');
else
  await serve().catch((e) => {
    logger('app-function').fatal({ err: e }, e instanceof Error ? e.message : String(e));
    process.exit(1);
  });
