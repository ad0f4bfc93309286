/**
 * `--sweep-rates` against a synthetic server (a real HTTP server on a free port speaking the gateway's routes)
 * that serves one request at a time in 100 ms: latency grows with load once the rate passes 10 req/s.
 */
import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchCommand } from '../../../control/cli/bench.js';
import { sleep } from '../../../lib/wait.js';
import { startBenchGateway } from '../../helpers/bench-gateway.js';

const SERVICE_MS = 100;

/** A FIFO single server: each invoke waits for the ones before it, then takes SERVICE_MS. */
async function startQueueServer(): Promise<{ url: string; served: () => number; close: () => Promise<void> }> {
  let queue = Promise.resolve();
  let served = 0;
  const gateway = await startBenchGateway('queue', (req, reply) => {
    req.resume();
    queue = queue.then(async () => { await sleep(SERVICE_MS); served++; reply(200, { echo: 'ok' }); });
  });
  return { ...gateway, served: () => served };
}

test('a sweep stops at the first rate below 90% attainment and reports the rate before it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-sweep-'));
  const server = await startQueueServer();
  t.teardown(async () => { await server.close(); await rm(dir, { recursive: true, force: true }); });
  await writeFile(join(dir, 'req.jsonl'), '{"text":"x"}\n');
  const out: string[] = [];
  // 2 req/s: the server idles between requests (E2EL ≈ 100 ms ≪ 1500 ms). 100 req/s: 24 requests queue for
  // 2.4 s, so about half finish after 1500 ms. 200 req/s must never run.
  await benchCommand({ out: (l) => out.push(l), err: () => {} }, () => server.url).exitOverride().parseAsync(
    ['--api', 'invoke', '--app', 'queue', '--dataset', join(dir, 'req.jsonl'), '--sweep-rates', '2,100,200', '--num-requests', '24', '--slo', 'e2el_ms=1500', '--result-dir', join(dir, 'out')],
    { from: 'user' },
  );
  const r = JSON.parse(readFileSync(join(dir, 'out', 'results.json'), 'utf8')) as { runs: Array<{ request_rate: number; slo_attainment: number }>; highest_rate_at_target_attainment: number };
  t.deepEqual(r.runs.map((x) => x.request_rate), [2, 100]);
  t.true(r.runs[0]!.slo_attainment >= 0.9);
  t.true(r.runs[1]!.slo_attainment < 0.9);
  t.is(r.highest_rate_at_target_attainment, 2);
  t.is(server.served(), 48);
  t.regex(out.join('\n'), /Highest rate with ≥ 90% SLO attainment: 2 req\/s/);
  for (const f of ['summary.md', 'latency-cdf.svg', 'latency-cdf.png', 'throughput.svg', 'throughput.png', 'timeline.svg']) t.true(existsSync(join(dir, 'out', f)), f);
});
