/**
 * Store benchmark: what the Store layer costs over the bare client, measured in the same run.
 *  - RedisStore.adjustOutstanding (EVALSHA of a Lua script, existence check + HINCRBY) vs a raw HINCRBY;
 *  - RedisStore.getExecutor (HGETALL + JSON decode) vs a raw HGETALL;
 *  - RedisStore acquireTask+releaseTask (two Lua scripts, each publishing) vs two raw HINCRBYs;
 *  - MemoryStore.adjustOutstanding vs an async Map increment.
 * Sequential calls (latency per call, µs); rounds alternate store/baseline and the median round counts.
 * Run alone: node --import tsx test/bench/store.ts
 */
import { Redis } from 'ioredis';
import { MemoryStore } from '../../control/store/memory.js';
import { RedisStore } from '../../control/store/redis.js';
import { uniquePrefix } from '../helpers/ids.js';
import { startRedis } from '../helpers/redis.js';
import { sampleRoute, sampleTask } from '../helpers/store-records.js';
import { median, type BenchResult } from './types.js';

const ROUNDS = 5;

/** µs per call of `op`, as the median over rounds of `n` sequential calls. */
async function perCall(n: number, op: () => Promise<unknown>, rounds: number[]): Promise<void> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op();
  rounds.push(Number(process.hrtime.bigint() - start) / 1000 / n);
}

async function compare(
  name: string,
  n: number,
  op: () => Promise<unknown>,
  baselineName: string,
  baseline: () => Promise<unknown>,
  notes?: string,
): Promise<BenchResult> {
  await perCall(Math.min(n, 500), op, []); // warm-up (script load, JIT)
  await perCall(Math.min(n, 500), baseline, []);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await perCall(n, op, a);
    await perCall(n, baseline, b);
  }
  const figure = median(a);
  const base = median(b);
  return { name, figure, unit: 'µs/call', baseline: base, baselineName, ratio: figure / base, ...(notes ? { notes } : {}) };
}

export async function run(): Promise<BenchResult[]> {
  const server = await startRedis();
  const prefix = uniquePrefix('bench');
  const store = new RedisStore({ url: server.url, prefix });
  const raw = new Redis(server.url);
  try {
    await store.ready();
    const route = sampleRoute(1, 'task-a');
    await store.putExecutor(route);
    const task = sampleTask(1);
    await store.acquireTask(task);
    const rawKey = `${prefix}raw`;
    await raw.hset(rawKey, 'outstanding', 0, 'record', JSON.stringify(route));

    const memory = new MemoryStore();
    await memory.putExecutor(route);
    const counts = new Map([['exec-1', 0]]);

    const results = [
      await compare('redis adjustOutstanding', 2000, () => store.adjustOutstanding('exec-1', 1),
        'raw ioredis HINCRBY', () => raw.hincrby(rawKey, 'outstanding', 1)),
      await compare('redis getExecutor', 2000, () => store.getExecutor('exec-1'),
        'raw ioredis HGETALL', () => raw.hgetall(rawKey)),
      await compare('redis acquireTask+releaseTask', 1000,
        async () => { await store.acquireTask(task); await store.releaseTask(task.taskId); },
        'raw ioredis 2×HINCRBY',
        async () => { await raw.hincrby(rawKey, 'outstanding', 1); await raw.hincrby(rawKey, 'outstanding', -1); },
        'store side also publishes a change per call'),
      await compare('memory adjustOutstanding', 200_000, () => memory.adjustOutstanding('exec-1', 1),
        'async Map increment', async () => counts.set('exec-1', counts.get('exec-1')! + 1)),
    ];
    await memory.close();
    return results;
  } finally {
    await store.close();
    raw.disconnect();
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await run();
  console.table(results.map((r) => ({
    name: r.name,
    figure: r.figure.toFixed(2),
    unit: r.unit,
    baseline: r.baseline.toFixed(2),
    baselineName: r.baselineName,
    ratio: r.ratio.toFixed(2),
  })));
}
