/**
 * The live side and the simulated side of the tiny-model validation (the CI test and the `--only simulate` row
 * both run this): the mllm app on an app platform, the hop overhead measured now, `cornserve bench`, and the
 * same seeded workload through the simulator with the fitted local-cpu preset and that overhead — on the node's
 * shared cores (the preset's host block), and, for comparison in the same run, with every executor a device of
 * its own and the hops a fixed delay (the simulator before it modelled shared cores).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { benchCommand } from '../../control/cli/bench.js';
import type { RunResults } from '../../bench/report/results.js';
import { chatRequestFor } from '../../bench/workload/requests.js';
import { parseScenario, type Scenario } from '../../sim/scenario/schema.js';
import { simulate } from '../../sim/run.js';
import { measureOverheadMs, TINY_APP, TINY_WORKLOAD, tinyBenchArgs, tinyValidationScenario } from '../../sim/validate.js';
import type { AppPlatform } from './app-platform.js';

export interface TinyValidation {
  live: RunResults;
  sim: RunResults;
  overheadMs: number;
  aloneMs: number;
  /** The same workload with independent devices and no per-invocation cost (its own hop overhead, from the same serial probe). */
  independent: { sim: RunResults; overheadMs: number };
}

/** The tiny scenario with every executor on a device of its own, and only the per-request hop (a fixed delay). */
async function independentScenario(o: Parameters<typeof tinyValidationScenario>[0]): Promise<Scenario> {
  const sc = await parseScenario(tinyValidationScenario(o));
  const { cores: _, ...cluster } = sc.cluster;
  return { ...sc, cluster, invocationOverheadMs: 0 };
}

export async function tinyLiveVsSimulated(ap: AppPlatform, run: { rate: number; requests: number; seed: number; devices: number }, dir: string): Promise<TinyValidation> {
  // The hop overhead: serial text requests live, minus what the fitted models predict for one alone.
  const one = (await simulate(await parseScenario(tinyValidationScenario({ ...run, rate: 1, requests: 1, overheadMs: 0, mix: 'text:1' })))).results;
  const aloneMs = one.median_e2el_ms as number;
  const text = chatRequestFor({ index: 0, kind: 'text', inputTokens: TINY_WORKLOAD.inputLen, outputTokens: TINY_WORKLOAD.outputLen, mediaSeed: 0 }, TINY_APP).body;
  const overheadMs = await measureOverheadMs(async () => {
    const res = await fetch(`${ap.p.gatewayUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(text) });
    if (!res.ok) throw new Error(`warm-up chat: HTTP ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }, 7, aloneMs);
  await benchCommand({ out: () => {}, err: () => {} }, () => ap.p.gatewayUrl).exitOverride().parseAsync(tinyBenchArgs(run, dir), { from: 'user' });
  const live = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8')) as RunResults;
  const sim = (await simulate(await parseScenario(tinyValidationScenario({ ...run, overheadMs })))).results;
  // The serial probe's median was overheadMs + aloneMs (when positive); the independent model predicts its own alone time.
  const aloneIndependent = (await simulate(await independentScenario({ ...run, rate: 1, requests: 1, overheadMs: 0, mix: 'text:1' }))).results.median_e2el_ms as number;
  const independentOverheadMs = Math.max(0, overheadMs + aloneMs - aloneIndependent);
  const independent = { sim: (await simulate(await independentScenario({ ...run, overheadMs: independentOverheadMs }))).results, overheadMs: independentOverheadMs };
  return { live, sim, overheadMs, aloneMs, independent };
}
