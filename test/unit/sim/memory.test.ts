/** Device memory in the simulator: model sizes with their sources, the KV budget they leave, and the checks before a run. */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { loadModelSpecs, numberPaths, tilesOf } from '../../../sim/memory/specs.js';
import { encoderBytes, GIB, llmMemory } from '../../../sim/memory/budget.js';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';

test('every number of every model memory preset names its source', (t) => {
  const specs = loadModelSpecs();
  t.true(Object.keys(specs).length >= 5);
  for (const [name, spec] of Object.entries(specs)) {
    for (const path of numberPaths(spec)) t.regex(spec.sources[path] ?? '', /config\.json|model card|index\.json|report|\.py|preprocessor_config|no windowed/, `${name}.${path}`);
    t.deepEqual(Object.keys(spec.sources).filter((k) => !numberPaths(spec).includes(k)), [], `${name}: sources for fields it does not have`);
  }
});

test('every GPU preset gives its memory with a source', async (t) => {
  const raw = parseYaml(await readFile('sim/presets/gpus.yaml', 'utf8')) as { devices: Record<string, { memory?: { gib: number; source: string } }> };
  for (const [name, d] of Object.entries(raw.devices)) t.regex(d.memory?.source ?? '', /data sheet/, name);
});

test('InternVL cuts a 1920×1080 image into 4 × 2 tiles and a thumbnail', (t) => {
  const tile = loadModelSpecs()['internvl3-38b']!.encoder!.tile!;
  t.is(tilesOf(1920, 1080, tile), 9);
  t.is(tilesOf(448, 448, tile), 1, 'one tile needs no thumbnail');
});

test('a co-located encoder takes its weights and activations from the LLM’s KV budget', (t) => {
  const spec = loadModelSpecs()['internvl3-38b']!;
  const device = { bytes: 48 * GIB, utilization: 0.9 };
  const batch = { maxBatchedTokens: 4096, maxSeqs: 64 };
  const load = { items: 1, unitsPerItem: 9 * 1024 };
  const alone = llmMemory(spec, device, 2, batch);
  const shared = llmMemory(spec, device, 2, batch, load);
  const encoder = encoderBytes(spec.encoder!, spec.dtypeBytes, 2, load);
  t.is(alone.kvBytes - shared.kvBytes, encoder.weights + encoder.activations);
  t.true(encoder.weights > 5 * GIB, 'InternViT-6B in bf16 over 2 devices');
  t.true(shared.kvTokens < alone.kvTokens);
});

const scenario = (over: Record<string, unknown> = {}) => ({
  name: 'mem',
  cluster: { nodes: 1, devicesPerNode: 8, device: 'a40-48g' },
  app: { file: 'experiment/apps/mllm-image.ts', api: 'chat' },
  workload: { requestRate: 1, mix: 'image:1', inputLen: 100, outputLen: 300, imageSize: '1920x1080', numRequests: 4, seed: 1 },
  memory: { model: 'internvl3-38b' },
  deployment: { replicas: { 'encoder:image': 1, 'llm:cornserve/tiny-vlm-a': 1 }},
  ...over,
});

test('an unknown model is refused, naming the field and the known ones', async (t) => {
  const e = await t.throwsAsync(parseScenario(scenario({ memory: { model: 'llama-9000' } })));
  t.regex(e!.message, /^memory\.model: unknown model 'llama-9000' \(known: .*internvl3-38b/);
});

test('InternVL3-38B with its encoder inside does not fit one A100: refused, saying what takes the memory', async (t) => {
  const sc = await parseScenario(scenario({ cluster: { nodes: 1, devicesPerNode: 1, device: 'a100-80g' }, deployment: { mode: 'monolithic', replicas: { 'llm:cornserve/tiny-vlm-a': 1 } } }));
  const e = await t.throwsAsync(simulate(sc));
  t.regex(e!.message, /^deployment: llm:cornserve\/tiny-vlm-a at TP 1 on a100-80g with its encoder inside: weights 61\.\d GiB \+ activations .* \+ co-located encoder .* short$/);
});

test('a model that fits its device at no TP degree is refused with the numbers', async (t) => {
  const e = await t.throwsAsync(parseScenario(scenario({ cluster: { nodes: 1, devicesPerNode: 1, device: 'a40-48g' } })));
  t.regex(e!.message, /^memory\.model: internvl3-38b's LLM fits no a40-48g .* TP 1: weights 61\.\d GiB .* short/);
});

test('a request larger than the KV cache is refused before the run, naming the workload fields', async (t) => {
  const sc = await parseScenario(scenario({ memory: { model: 'qwen2.5-vl-7b' }, workload: { requestRate: 1, mix: 'text:1', inputLen: 1_000_000, outputLen: 10, numRequests: 2 }, deployment: { replicas: { 'llm:cornserve/tiny-vlm-a': 1 } } }));
  const e = await t.throwsAsync(simulate(sc));
  t.regex(e!.message, /^workload: a request of up to 1000010 tokens \(workload\.inputLen 1000000 .*\) exceeds the KV cache of llm:cornserve\/tiny-vlm-a at TP 1 on a40-48g: \d+ tokens/);
});

test('with memory on, an LLM executor’s KV cache is what its device leaves, and smaller with the encoder inside', async (t) => {
  const kv = async (mode: 'manual' | 'monolithic') => {
    const sc = await parseScenario(scenario({ cluster: { nodes: 1, devicesPerNode: 2, device: 'a100-80g' }, memory: { model: 'qwen2.5-vl-7b' }, deployment: { mode, replicas: mode === 'manual' ? { 'encoder:image': 1, 'llm:cornserve/tiny-vlm-a': 1 } : { 'llm:cornserve/tiny-vlm-a': 1 } } }));
    const o = await simulate(sc);
    t.is(o.results.completed, 4);
    return { llm: o.memory!['llm:cornserve/tiny-vlm-a']! };
  };
  const split = await kv('manual');
  const mono = await kv('monolithic');
  t.true(split.llm.kvTokens > mono.llm.kvTokens, `${split.llm.kvTokens} vs ${mono.llm.kvTokens}`);
  t.not(split.llm.kvTokens, 66_000, 'not the preset’s fixed figure');
});
