/**
 * Platform overhead: the echo app (zero service time) end to end through the gateway of a `cornserve up`
 * process (client -> gateway -> app function -> dispatcher -> echo executor) versus a direct keep-alive HTTP call
 * to the same echo executor, measured in the same run with the same client (node:http, keep-alive agent),
 * in alternating rounds so machine noise hits both alike. Then requests/s at saturation (32 concurrent
 * callers) through the gateway versus directly.
 * Target: median added latency (gateway median - direct median) at most 4x the direct round trip.
 * Two rows split that latency: the same request to an app that calls no task (the gateway and app-function hops
 * alone), and what the echo app's one task call adds on top of it (the in-process dispatch and the executor call,
 * the executor's own work included).
 */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { pidListeningOn, treeCpuMs } from '../../bench/client/proc.js';
import { launchUp } from '../../control/compose/launch-up.js';
import type { BenchResult } from './types.js';
import { formatTable } from './types.js';

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function post(url: URL, body: string): Promise<void> {
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

export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

export async function timeCalls(call: () => Promise<void>, n: number, into: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    into.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}

export async function saturate(call: () => Promise<void>, concurrency: number, ms: number): Promise<number> {
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

/** `cornserve up` as its own process (as a user runs it): the client below does not share its event loop. */
export async function startUp(extraEnv: NodeJS.ProcessEnv = {}, devices = 1, args: string[] = []): Promise<{ url: string; dispatcherUrl: string; pid: number; stop: () => Promise<void> }> {
  const up = await launchUp({
    args: ['--devices', String(devices), ...args],
    env: { CORNSERVE_ADMIN_TOKEN: 'bench', ...extraEnv },
    readyTimeoutMs: 60_000,
    sink: (_, line, stream) => { if (stream === 'stderr') process.stderr.write(`${line}\n`); }, // as before: its stderr on ours
  });
  return { url: up.url, dispatcherUrl: up.dispatcherUrl, pid: up.pid, stop: async () => { await up.stop(); } };
}

/** Registers functions/apps/NAME.ts on a startUp() platform (throws unless its final event came). */
export async function registerApp(url: string, name: string): Promise<void> {
  await registerSource(url, await readFile(new URL(`../../functions/apps/${name}.ts`, import.meta.url), 'utf8'), name);
}

/** Registers an app from its source text on a startUp() platform (throws unless its final event came). */
export async function registerSource(url: string, source: string, name: string): Promise<void> {
  const res = await fetch(`${url}/app/register`, { method: 'POST', headers: { authorization: 'Bearer bench', 'content-type': 'application/json' }, body: JSON.stringify({ source }) });
  const text = await res.text();
  if (!text.includes('"type":"final"')) throw new Error(`registering ${name} failed: ${text}`);
}

export async function registerEcho(url: string): Promise<string> {
  await registerApp(url, 'echo');
  const tasks = (await (await fetch(`${url}/tasks/list`)).json()) as Array<{ executors: Array<{ url: string }> }>;
  return tasks[0]!.executors[0]!.url;
}

/** The echo app's request and reply, answered by serve() itself: no task, so no dispatch and no executor call. */
const NO_TASK_APP = `import { z } from 'zod';
import { defineApp } from '../sdk/index.js';
export default defineApp({
  name: 'no-task',
  tasks: {},
  request: z.object({ text: z.string() }),
  response: z.object({ echo: z.string() }),
  async serve(request) {
    return { echo: request.text };
  },
});
`;

export async function run(): Promise<BenchResult[]> {
  const up = await startUp();
  try {
    const executorUrl = await registerEcho(up.url);
    await registerSource(up.url, NO_TASK_APP, 'no-task');
    const direct = () => post(new URL('/echo', executorUrl), '{"text":"x"}');
    const gateway = () => post(new URL('/app/invoke/echo', up.url), '{"request_data":{"text":"x"}}');
    const noTask = () => post(new URL('/app/invoke/no-task', up.url), '{"request_data":{"text":"x"}}');

    await timeCalls(direct, 300, []); // warm-up: JIT, connections
    await timeCalls(gateway, 300, []);
    await timeCalls(noTask, 300, []);
    const d: number[] = [];
    const g: number[] = [];
    const n: number[] = [];
    for (let round = 0; round < 10; round++) {
      await timeCalls(direct, 200, d);
      await timeCalls(gateway, 200, g);
      await timeCalls(noTask, 200, n);
    }
    const dMed = quantile(d, 0.5);
    const gMed = quantile(g, 0.5);
    const nMed = quantile(n, 0.5);
    const added = gMed - dMed;
    const executorPid = pidListeningOn(Number(new URL(executorUrl).port));
    let cpu = { direct: NaN, gateway: NaN };
    if (executorPid !== undefined) {
      const n = 2_000;
      const e0 = treeCpuMs(executorPid);
      await timeCalls(direct, n, []);
      const perDirect = (treeCpuMs(executorPid) - e0) / n;
      const p0 = treeCpuMs(up.pid);
      await timeCalls(gateway, n, []);
      cpu = { direct: perDirect, gateway: (treeCpuMs(up.pid) - p0) / n };
    }
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
        name: 'overhead, split: an app that calls no task, median',
        figure: nMed,
        unit: 'ms',
        baseline: dMed,
        baselineName: 'direct keep-alive call, median',
        ratio: nMed / dMed,
        notes: 'the gateway and app-function hops alone (client -> gateway -> app function -> back); ratio = its median / the direct call\'s',
      },
      {
        name: 'overhead, split: what the task call adds',
        figure: gMed - nMed,
        unit: 'ms',
        baseline: dMed,
        baselineName: 'direct keep-alive call, median',
        ratio: (gMed - nMed) / dMed,
        notes: 'echo app median - no-task app median: the in-process dispatch and the executor call from the app function, the executor\'s own work included (1 = as cheap as a direct call)',
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
        name: 'overhead: CPU per request, whole platform',
        figure: cpu.gateway,
        unit: 'ms CPU',
        baseline: cpu.direct,
        baselineName: 'echo executor alone, direct call',
        ratio: cpu.gateway / cpu.direct,
        notes: 'CPU time of every platform process (gateway, dispatcher, app function, executor) per request; independent of other load on the machine',
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
    await up.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
  process.exit(0);
}
