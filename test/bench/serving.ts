/**
 * Serving benchmark: a short Poisson run (the `cornserve bench` runner and senders) of the mllm app through the
 * gateway's OpenAI route, beside the same requests sent straight to the executors in the same run: text
 * requests to the LLM executor's /v1/chat/completions, image requests as the dispatcher sends them (Eric's
 * /embeddings forwarding to the LLM's sidecar rank, and the LLM request naming that embedding's data id, at
 * the same time). `cornserve up` runs as its own process. Gateway and direct passes alternate (two each) so
 * load drift hits both; figures are TTFT and TPOT p50/p99 over all passes. Ratio = gateway / direct (lower is
 * better).
 *
 *   node --import tsx test/bench/main.ts --only serving
 */
import { randomUUID } from 'node:crypto';
import { GatewayClient } from '../../control/gateway/client.js';
import { startRun } from '../../bench/client/runner.js';
import { chatTarget, type Target } from '../../bench/client/senders.js';
import { aggregate, runDurationS } from '../../bench/metrics/aggregate.js';
import type { RequestRecord } from '../../bench/metrics/record.js';
import { arrivalTimesMs } from '../../bench/workload/arrivals.js';
import { nextSpec, parseMix } from '../../bench/workload/mix.js';
import { RandomSource } from '../../bench/workload/random.js';
import { chatRequestFor, type PreparedRequest } from '../../bench/workload/requests.js';
import { registerApp, startUp } from './overhead.js';
import { formatTable, type BenchResult } from './types.js';

const MODEL_ID = 'cornserve/tiny-vlm-a';
const RATE = 2;
const PER_PASS = 20;
const PASSES = 2;
const WARMUP = 4;
const MIX = { mix: parseMix('text:0.5,image:0.5'), inputLen: 64, outputLen: 32, rangeRatio: 0, image: { width: 224, height: 224 }, audioSeconds: 1, videoFrames: 2 };

/** Straight to the executors, as the dispatcher would call them for the mllm app's graph. */
function directTarget(llmUrl: string, llmRanks: number[], ericUrl: string): Target {
  const llm = chatTarget(llmUrl);
  return {
    async send(body, o) {
      const embeds: Array<{ id: string; modality: string; model_id: string; url: string; receiver_sidecar_ranks: number[][] }> = [];
      const messages = (body.messages as Array<{ role: string; content: unknown }>).map((m) => ({
        ...m,
        content: typeof m.content === 'string' ? m.content : (m.content as Array<Record<string, any>>).map((p) => {
          if (p.type !== 'image_url') return p;
          const id = randomUUID().replace(/-/g, ''); // the LLM takes hex data ids
          embeds.push({ id, modality: 'image', model_id: MODEL_ID, url: p.image_url.url, receiver_sidecar_ranks: [llmRanks] });
          return { type: 'image_url', image_url: { url: `data:image/uuid;data_id=${id};url=${p.image_url.url},` } };
        }),
      }));
      const encode = embeds.length
        ? fetch(`${ericUrl}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: embeds }) }).then(async (r) => {
          if (!r.ok) throw new Error(`eric: HTTP ${r.status} ${await r.text()}`);
        })
        : Promise.resolve();
      const [m, e] = await Promise.allSettled([llm.send({ ...body, model: MODEL_ID, messages }, o), encode]);
      const measured = (m as PromiseFulfilledResult<Awaited<ReturnType<Target['send']>>>).value;
      if (e.status === 'rejected') return { ...measured, ok: false, errorCode: 'ERIC_FAILED', errorMessage: String(e.reason) };
      return measured;
    },
  };
}

/** One Poisson pass of `requests` at RATE through `target`. */
async function pass(target: Target, requests: PreparedRequest[], seed: number): Promise<RequestRecord[]> {
  const run = startRun({
    target,
    arrivals: arrivalTimesMs({ rate: RATE, burstiness: 1, pattern: { kind: 'constant' } }, new RandomSource(seed).fork('arrivals')),
    request: (i) => requests[i]!,
    limit: { count: requests.length },
    requestTimeoutMs: 120_000,
    drainTimeoutMs: 0,
  });
  return (await run.done).records;
}

export async function run(): Promise<BenchResult[]> {
  const up = await startUp({}, 4);
  try {
    await registerApp(up.url, 'mllm');
    const tasks = await new GatewayClient(up.url).tasks();
    const llm = tasks.find((t) => t.name.startsWith('llm-'));
    const eric = tasks.find((t) => t.name.startsWith('encoder-image'));
    if (!llm?.executors[0] || !eric?.executors[0]) throw new Error(`mllm's tasks not found in /tasks/list: ${tasks.map((t) => t.name).join(', ')}`);
    const gateway = chatTarget(up.url);
    const direct = directTarget(llm.executors[0].url, llm.devices.map((d) => d.globalRank), eric.executors[0].url);

    const rng = new RandomSource(0).fork('mix');
    const requests = Array.from({ length: WARMUP + PASSES * PER_PASS }, (_, i) => chatRequestFor(nextSpec(i, MIX, rng), 'mllm'));
    for (const r of requests.slice(0, WARMUP)) {
      for (const target of [gateway, direct]) {
        const m = await target.send(r.body);
        if (!m.ok) throw new Error(`warm-up request failed: ${m.errorCode} ${m.errorMessage}`);
      }
    }
    const records = { gateway: [] as RequestRecord[], direct: [] as RequestRecord[] };
    for (let p = 0; p < PASSES; p++) {
      const batch = requests.slice(WARMUP + p * PER_PASS, WARMUP + (p + 1) * PER_PASS).map((r, i) => ({ ...r, index: i }));
      records.direct.push(...(await pass(direct, batch, p)));
      records.gateway.push(...(await pass(gateway, batch, p)));
    }
    const agg = (rs: RequestRecord[]) => aggregate(rs, { durationS: runDurationS(rs), percentiles: [50, 99] });
    const g = agg(records.gateway);
    const d = agg(records.direct);
    const failed = `${g.failed as number} gateway / ${d.failed as number} direct failed`;
    const row = (metric: 'ttft' | 'tpot', q: 50 | 99): BenchResult => {
      const figure = g[`p${q}_${metric}_ms`] as number;
      const baseline = d[`p${q}_${metric}_ms`] as number;
      return {
        name: `serving: mllm ${metric.toUpperCase()} p${q}, Poisson ${RATE} req/s`,
        figure, unit: 'ms', baseline, baselineName: `same requests straight to the LLM/Eric executors, p${q}`, ratio: figure / baseline,
        notes: `${PASSES}×${PER_PASS} requests each way (text:0.5,image:0.5 224×224, 64 in / 32 out tokens), alternating passes; ratio = gateway / direct (lower is better); ${failed}`,
      };
    };
    return [row('ttft', 50), row('ttft', 99), row('tpot', 50), row('tpot', 99)];
  } finally {
    await up.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
  process.exit(0);
}
