/** `cornserve simulate fit`: measuring the tiny models, fitting, and the preset file scenarios load by name. */
import test from 'ava';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { fitSamples, measureAndFit, presetYaml, QUICK_PLAN, type FitOutcome } from '../../../sim/fit/measure.js';
import { hostModel, presetWithHost } from '../../../sim/fit/host.js';
import { stageModelsSchema } from '../../../sim/latency/models.js';
import { loadPresets, parseScenario } from '../../../sim/scenario/schema.js';
import { modelsDir } from '../../helpers/models.js';

const GEOMETRY = { patchSize: 14, hidden: 256, maxPositions: 2048, padMultiple: 16, steps: 4 };

/** Samples that lie exactly on known lines. */
function exactSamples(): FitOutcome['samples'] {
  return {
    encoder: [16, 64, 256, 1024].map((units) => ({ units, ms: 2 + 0.1 * units })),
    prefill: [[16], [64], [256], [512], [64, 64], [128, 128, 128]].map((tokens) => {
      const s = tokens.reduce((a, b) => a + b, 0);
      const q = tokens.reduce((a, b) => a + b * b, 0);
      return { tokens, ms: 3 + 0.2 * s + 1e-4 * q };
    }),
    decode: [[1, 64], [4, 64], [8, 256], [16, 512], [32, 128]].map(([b, ctx]) => ({ contexts: Array<number>(b!).fill(ctx!), ms: 1 + 5e-4 * b! * ctx! + 0.4 * b! })),
    generator: [1, 2, 4].map((units) => ({ units, ms: 10 + 3 * units })),
    host: { onceMs: 5, twiceMs: 8 },
  };
}

test('the measured tiny models give one positive timing per planned point', async (t) => {
  const lines: string[] = [];
  const o = await measureAndFit(QUICK_PLAN, (l) => lines.push(l), await modelsDir()).catch((e: Error) => {
    // A too-noisy fit is refused by name; the measurement itself is what this test checks.
    if (e.name !== 'ModelOutputError') throw e;
    return undefined;
  });
  const points = QUICK_PLAN.encoder.length + QUICK_PLAN.prefill.length + QUICK_PLAN.decode.length + QUICK_PLAN.generator.length;
  t.is(lines.length, points + 1, 'one progress line per point, and one for the live platform\'s hops');
  t.regex(lines[0]!, /^fit \[1\/\d+\] encoder 1 × 56×56 \(16 patches\): [\d.]+ ms$/);
  t.regex(lines.at(-1)!, /^fit host: echo request with one call [\d.]+ ms, with two calls [\d.]+ ms/);
  if (o) {
    const all = [...o.samples.encoder, ...o.samples.prefill, ...o.samples.decode, ...o.samples.generator];
    t.is(all.length, points);
    t.true(all.every((s) => Number.isFinite(s.ms) && s.ms > 0));
    t.true(o.host.cores >= 1 && o.host.requestMs >= 0 && o.host.invocationMs >= 0, JSON.stringify(o.host));
  }
});

test('fitting samples that lie on known lines recovers the lines, with the executors’ limits', (t) => {
  const m = fitSamples(exactSamples(), GEOMETRY);
  const near = (got: number, want: number) => Math.abs(got - want) <= 1e-6 * Math.max(1, Math.abs(want));
  t.true(near(m.encoder!.a, 2) && near(m.encoder!.b, 0.1), JSON.stringify(m.encoder));
  t.true(near(m.llm!.prefill.a, 3) && near(m.llm!.prefill.b, 0.2) && near(m.llm!.prefill.c, 1e-4), JSON.stringify(m.llm!.prefill));
  t.true(near(m.llm!.decode.a, 1) && near(m.llm!.decode.b, 5e-4) && near(m.llm!.decode.c, 0.4), JSON.stringify(m.llm!.decode));
  t.true(near(m.generator!.perStep.a, 10) && near(m.generator!.perStep.b, 3));
  t.is(m.llm!.kvTokens, 32 * 2048);
  t.is(m.encoder!.patchSize, 14);
});

test('a fit with a negative constant is redone through the origin, so no duration is negative', (t) => {
  const s = exactSamples();
  s.decode = s.decode.map((d) => ({ ...d, ms: d.ms - 3 })); // a = −2: the free fit would give −1.6 ms for one short sequence
  const m = fitSamples(s, GEOMETRY);
  t.is(m.llm!.decode.a, 0);
  t.true(m.llm!.decode.c > 0);
});

test('the preset file says where and when it was fitted and loads as a device preset', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sim-fit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const o: FitOutcome = { models: fitSamples(exactSamples(), GEOMETRY), host: hostModel(exactSamples().host, 2), samples: exactSamples(), machine: 'box (2 × cpu)', seconds: 42, loadAverage: 1.5 };
  const text = presetYaml('my-box', o, new Date('2026-11-25T12:00:00Z'));
  t.regex(text, /^# FITTED latency models .*\n# Fitted on box \(2 × cpu\), 2026-11-25, by `cornserve simulate fit`/);
  const raw = parseYaml(text) as { devices: Record<string, { source: string; models: unknown; host: unknown }> };
  t.regex(raw.devices['my-box']!.source, /fitted on box/);
  t.deepEqual(raw.devices['my-box']!.host, { cores: 2, requestMs: 2, invocationMs: 3 });
  t.regex(text, /# {3}host echo request, one call→5\.00, two calls→8\.00/);
  t.true(stageModelsSchema.safeParse(raw.devices['my-box']!.models).success);
});

test('the committed local-cpu preset was fitted by `cornserve simulate fit` and scenarios name it', async (t) => {
  const presets = await loadPresets();
  t.regex(presets['local-cpu']!.source, /^fitted on .* by cornserve simulate fit/);
  t.regex(await readFile(new URL('../../../sim/presets/local-cpu.yaml', import.meta.url), 'utf8'), /^# FITTED latency models/);
  const sc = await parseScenario({ name: 'x', cluster: { nodes: 1, devicesPerNode: 2, device: 'local-cpu' }, app: { file: 'functions/apps/mllm.ts' } });
  t.deepEqual(sc.models.llm, presets['local-cpu']!.models.llm);
});

test('the host model takes one more call as the per-invocation cost and the rest as the per-request cost', (t) => {
  t.deepEqual(hostModel({ onceMs: 5, twiceMs: 8 }, 2), { cores: 2, requestMs: 2, invocationMs: 3 });
  // Noise can make two calls look faster than one: no negative cost, the whole request is the request's.
  t.deepEqual(hostModel({ onceMs: 5, twiceMs: 4.5 }, 4), { cores: 4, requestMs: 5, invocationMs: 0 });
});

test('--host-only replaces a preset\'s host block and its header line, keeping the fitted models and the other lines', (t) => {
  const o: FitOutcome = { models: fitSamples(exactSamples(), GEOMETRY), host: hostModel(exactSamples().host, 2), samples: exactSamples(), machine: 'box (2 × cpu)', seconds: 42, loadAverage: 1.5 };
  const first = presetYaml('my-box', o, new Date('2026-11-25T12:00:00Z'));
  const measured = { host: hostModel({ onceMs: 9, twiceMs: 13 }, 2), samples: { onceMs: 9, twiceMs: 13 } };
  const at = { machine: 'box (2 × cpu)', loadAverage: 0.5, date: new Date('2026-11-27T12:00:00Z') };
  const once = presetWithHost(first, 'my-box', measured, at);
  const twice = presetWithHost(once, 'my-box', measured, at);
  t.is(twice, once, 'a second measurement replaces the first one\'s header lines');
  const raw = parseYaml(once) as { devices: Record<string, { models: unknown; host: unknown }> };
  t.deepEqual(raw.devices['my-box']!.host, { cores: 2, requestMs: 5, invocationMs: 4 });
  t.deepEqual(raw.devices['my-box']!.models, (parseYaml(first) as typeof raw).devices['my-box']!.models);
  t.regex(once, /^# FITTED latency models/);
  t.regex(once, /# host: measured by `cornserve simulate fit --host-only` \(sim\/fit\/host\.ts\) on box \(2 × cpu\), 2026-11-27, load average 0\.5/);
  t.throws(() => presetWithHost(first, 'other', measured, at), { message: /no device 'other'/ });
});
