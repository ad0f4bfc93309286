/**
 * Platform overhead: the echo app (zero service time) end to end through the gateway
 * (client -> gateway -> app function -> dispatcher -> echo executor) versus a direct keep-alive HTTP call
 * to the same echo executor, measured in the same run with the same client (node:http, keep-alive agent),
 * in alternating rounds so machine noise hits both alike. Then requests/s at saturation (32 concurrent
 * callers) through the gateway versus directly.
 * Target: median added latency (gateway median - direct median) at most 4x the direct round trip.
 */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { startCornserve } from '../../control/cli/up.js';
import type { BenchResult } from './types.js';
import { formatTable } from './types.js';

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function post(url: URL, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${url.pathname}: HTTP ${res.statusCode}`));
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function timeCalls(call: () => Promise<void>, n: number, into: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    into.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}

async function saturate(call: () => Promise<void>, concurrency: number, ms: number): Promise<number> {
  let done = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await call();
        done++;
      }
    }),
  );
  return done / (ms / 1000);
}

export async function run(): Promise<BenchResult[]> {
  const cs = await startCornserve({ port: 0, devices: 1, adminToken: 'bench', logSink: () => {} });
  try {
    let failure: string | undefined;
    await cs.apps.register({ source: await readFile(new URL('../../functions/apps/echo.ts', import.meta.url), 'utf8') }, (e) => {
      if (e.type === 'error') failure = e.message;
    });
    if (failure) throw new Error(`registering echo failed: ${failure}`);
    const echo = cs.apps.resolve('echo');
    const [route] = await cs.store.listExecutors(echo.taskIds[0]!);
    const direct = () => post(new URL('/echo', route!.url), '{"text":"x"}');
    const gateway = () => post(new URL('/app/invoke/echo', cs.gatewayUrl), '{"request_data":{"text":"x"}}');

    await timeCalls(direct, 300, []); // warm-up: JIT, connections
    await timeCalls(gateway, 300, []);
    const d: number[] = [];
    const g: number[] = [];
    for (let round = 0; round < 10; round++) {
      await timeCalls(direct, 200, d);
      await timeCalls(gateway, 200, g);
    }
    const dMed = quantile(d, 0.5);
    const gMed = quantile(g, 0.5);
    const added = gMed - dMed;
    const directRps = await saturate(direct, 32, 3_000);
    const gatewayRps = await saturate(gateway, 32, 3_000);
    return [
      {
        name: 'overhead: added median latency (gateway - direct)',
        figure: added,
        unit: 'ms',
        baseline: dMed,
        baselineName: 'direct keep-alive call, median',
        ratio: added / dMed,
        target: '≤ 4 (added / direct)',
        notes: `gateway median ${gMed.toFixed(3)} ms over ${g.length} calls; ratio = added latency / direct round trip (lower is better)`,
      },
      {
        name: 'overhead: p99 latency through the gateway',
        figure: quantile(g, 0.99),
        unit: 'ms',
        baseline: quantile(d, 0.99),
        baselineName: 'direct keep-alive call, p99',
        ratio: quantile(g, 0.99) / quantile(d, 0.99),
        notes: 'ratio = gateway p99 / direct p99 (lower is better)',
      },
      {
        name: 'overhead: requests/s at saturation (32 callers)',
        figure: gatewayRps,
        unit: 'req/s',
        baseline: directRps,
        baselineName: 'direct to the echo executor, 32 callers',
        ratio: gatewayRps / directRps,
        notes: 'ratio = gateway / direct (higher is better); client, gateway, function, dispatcher and executor share 2 cores',
      },
    ];
  } finally {
    agent.destroy();
    await cs.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
  process.exit(0);
}
