/**
 * Dispatch modes (what in-process dispatch saves): the echo app (zero service time) under `cornserve up --redis`, once with app functions
 * dispatching in process (`--dispatch in-process`: client -> gateway -> app function -> executor) and once through
 * the dispatcher service (`--dispatch cloudevent`: ... -> app function -> dispatcher -> executor), side by side;
 * then the same two modes under plain `cornserve up` (in-memory store: in process over the store link), through the
 * gateway only (its function's store link is private to the run):
 *  - requests/s at saturation (32 callers) through the gateway, each mode against a direct call to its executor;
 *  - a direct call to an app function's own endpoint (POST /invoke: what Knative's per-app route reaches, no gateway)
 *    beside the gateway path: a second function process of the same app, started here on a TCP port with the
 *    same environment the platform gives its own.
 * Every figure is relative to a baseline taken in the same run (the machine is shared). Run alone:
 *   node --import tsx test/bench/main.ts --only dispatch-modes
 */
import { fileURLToPath } from 'node:url';
import { startRedis } from '../helpers/redis.js';
import { startServerProcess } from '../helpers/server-process.js';
import { post, quantile, registerEcho, saturate, startUp, timeCalls } from './overhead.js';
import { formatTable, type BenchResult } from './types.js';

const ECHO_SOURCE = fileURLToPath(new URL('../../functions/apps/echo.ts', import.meta.url));
const SATURATE_MS = 3_000;

/** Median of `n` sequential calls, ms. */
async function medianMs(call: () => Promise<void>, n: number): Promise<number> {
  const xs: number[] = [];
  await timeCalls(call, n, xs);
  return quantile(xs, 0.5);
}

async function measureMode(mode: 'in-process' | 'cloudevent', redisUrl: string): Promise<BenchResult[]> {
  const up = await startUp({}, 1, ['--redis', redisUrl, '--dispatch', mode]);
  const fn = await (async () => {
    try {
      const executorUrl = await registerEcho(up.url);
      // The function as Knative runs it: its own process and port, the platform's store and dispatcher.
      const fn = await startServerProcess({
        entry: 'functions/runtime/main.ts',
        what: `echo app function (${mode})`,
        env: { CORNSERVE_APP_SOURCE: ECHO_SOURCE, CORNSERVE_APP_ID: 'bench-direct', CORNSERVE_DISPATCHER_URL: up.dispatcherUrl, CORNSERVE_DISPATCH: mode, CORNSERVE_STORE_URL: redisUrl, CORNSERVE_LOG_LEVEL: 'warn' },
      });
      return { fn, executorUrl };
    } catch (e) {
      await up.stop();
      throw e;
    }
  })();
  try {
    const direct = () => post(new URL('/echo', fn.executorUrl), '{"text":"x"}');
    const gateway = () => post(new URL('/app/invoke/echo', up.url), '{"request_data":{"text":"x"}}');
    const trigger = () => post(new URL('/invoke', fn.fn.url), '{"request_data":{"text":"x"}}');
    for (const call of [direct, gateway, trigger]) await medianMs(call, 200); // warm-up
    const [dMed, gMed, tMed] = [await medianMs(direct, 1000), await medianMs(gateway, 1000), await medianMs(trigger, 1000)];
    const directRps = await saturate(direct, 32, SATURATE_MS);
    const gatewayRps = await saturate(gateway, 32, SATURATE_MS);
    const triggerRps = await saturate(trigger, 32, SATURATE_MS);
    return [
      { name: `${mode}: requests/s at saturation through the gateway (32 callers)`, figure: gatewayRps, unit: 'req/s', baseline: directRps, baselineName: 'direct to the echo executor', ratio: gatewayRps / directRps, notes: 'higher is better' },
      { name: `${mode}: requests/s at saturation, direct to the app function (Knative-style trigger)`, figure: triggerRps, unit: 'req/s', baseline: directRps, baselineName: 'direct to the echo executor', ratio: triggerRps / directRps, notes: 'higher is better' },
      { name: `${mode}: median latency through the gateway`, figure: gMed, unit: 'ms', baseline: dMed, baselineName: 'direct to the echo executor', ratio: gMed / dMed, notes: 'lower is better' },
      { name: `${mode}: median latency, direct to the app function`, figure: tMed, unit: 'ms', baseline: dMed, baselineName: 'direct to the echo executor', ratio: tMed / dMed, notes: 'lower is better' },
    ];
  } finally {
    await fn.fn.stop();
    await up.stop();
  }
}

/** Each mode on a Redis of its own (an `up` on a used Redis would recover the other run's app). */
async function onFreshRedis(mode: 'in-process' | 'cloudevent'): Promise<BenchResult[]> {
  const redis = await startRedis();
  try {
    return await measureMode(mode, redis.url);
  } finally {
    await redis.stop();
  }
}

/** Plain `up` (in-memory store): median latency and requests/s at saturation through the gateway. */
async function measurePlain(mode: 'in-process' | 'cloudevent'): Promise<BenchResult[]> {
  const up = await startUp({}, 1, ['--dispatch', mode]);
  try {
    const executorUrl = await registerEcho(up.url);
    const direct = () => post(new URL('/echo', executorUrl), '{"text":"x"}');
    const gateway = () => post(new URL('/app/invoke/echo', up.url), '{"request_data":{"text":"x"}}');
    for (const call of [direct, gateway]) await medianMs(call, 200); // warm-up
    const [dMed, gMed] = [await medianMs(direct, 1000), await medianMs(gateway, 1000)];
    const directRps = await saturate(direct, 32, SATURATE_MS);
    const gatewayRps = await saturate(gateway, 32, SATURATE_MS);
    const what = mode === 'in-process' ? 'plain up, in-process (store link)' : 'plain up, cloudevent';
    return [
      { name: `${what}: requests/s at saturation through the gateway (32 callers)`, figure: gatewayRps, unit: 'req/s', baseline: directRps, baselineName: 'direct to the echo executor', ratio: gatewayRps / directRps, notes: 'higher is better' },
      { name: `${what}: median latency through the gateway`, figure: gMed, unit: 'ms', baseline: dMed, baselineName: 'direct to the echo executor', ratio: gMed / dMed, notes: 'lower is better' },
    ];
  } finally {
    await up.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  return [...(await onFreshRedis('in-process')), ...(await onFreshRedis('cloudevent')), ...(await measurePlain('in-process')), ...(await measurePlain('cloudevent'))];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
  process.exit(0);
}
