/**
 * Tensor parallelism over a manifest's `tensor_parallel` stages (Megatron-style shards). Stage semantics:
 *   - every graph is fed from a shared environment by input name (initially the model inputs, e.g. patches,
 *     position_ids, segment_ids; then `hidden`);
 *   - `replicated`: each rank runs the same graph; its first output is stored in the environment under its name
 *     (ranks agree, so rank 0's value is used);
 *   - `partial-sum`: rank r runs graphs[r]; the first outputs (partials) are all-reduced (summed) and added to
 *     `hidden` (the residual add happens after the reduction).
 * This module is the in-process reference: Eric's workers do the same across processes, each rank loading
 * only `graphsForRank(manifest, rank)` and summing partials through shared memory.
 */
import type ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import { type LoadOptions, type LoadedModel, loadManifest, loadModel } from './loader.js';
import type { Manifest } from './manifest.js';
import { f32, runSession } from './tensors.js';

export type Env = Record<string, ort.Tensor>;
export type Stage = NonNullable<Manifest['tensor_parallel']>['stages'][number];

function tp(manifest: Manifest) {
  if (!manifest.tensor_parallel) throw modelErrors.unsupported(`model '${manifest.name}' has no tensor_parallel section`);
  return manifest.tensor_parallel;
}

/** The distinct graph names rank `rank` needs. */
export function graphsForRank(manifest: Manifest, rank: number): string[] {
  const t = tp(manifest);
  if (!Number.isInteger(rank) || rank < 0 || rank >= t.degree) throw modelErrors.invalid(`rank ${rank} is outside degree ${t.degree}`);
  return [...new Set(t.stages.map((s) => s.graphs[rank]!))];
}

/** Opens the graphs of one rank (no adapters: projectors run after the body, unsharded). */
export async function loadRank(dir: string, rank: number, opts: Omit<LoadOptions, 'graphs' | 'modelIds'> = {}): Promise<LoadedModel> {
  return loadModel(dir, { ...opts, rank, graphs: graphsForRank(await loadManifest(dir), rank), modelIds: [] });
}

/** Runs rank `rank`'s graph of `stage`; returns its first output's name and value. */
export async function runStage(model: LoadedModel, stage: Stage, rank: number, env: Env): Promise<{ name: string; value: ort.Tensor }> {
  const name = stage.graphs[rank]!;
  const spec = model.manifest.graphs[name]!;
  const feeds: Env = {};
  for (const i of spec.inputs) {
    const v = env[i.name];
    if (!v) throw modelErrors.invalid(`stage '${stage.name}' needs '${i.name}', which is not in the environment`);
    feeds[i.name] = v;
  }
  const out = await runSession(model.graph(name), feeds, `tp stage ${stage.name} rank ${rank}`);
  const first = spec.outputs[0]!.name;
  return { name: first, value: out[first]! };
}

/** hidden + Σ partials (the all-reduce followed by the residual add). */
export function reducePartials(hidden: ort.Tensor, partials: readonly ort.Tensor[]): ort.Tensor {
  const h = hidden.data as Float32Array;
  const out = Float32Array.from(h);
  for (const p of partials) {
    const d = p.data as Float32Array;
    if (d.length !== out.length) throw modelErrors.runFailed(`partial of ${d.length} values for hidden of ${out.length}`);
    for (let i = 0; i < out.length; i++) out[i]! += d[i]!;
  }
  return f32(out, hidden.dims);
}

/** Applies one stage's results to the environment. */
export function applyStage(env: Env, stage: Stage, results: readonly { name: string; value: ort.Tensor }[]): void {
  if (stage.kind === 'replicated') {
    env[results[0]!.name] = results[0]!.value;
    return;
  }
  const hidden = env.hidden;
  if (!hidden) throw modelErrors.invalid(`stage '${stage.name}' reduces into 'hidden', which is not in the environment`);
  env.hidden = reducePartials(hidden, results.map((r) => r.value));
}

/** In-process reference: runs every stage on every rank (`ranks[r]` = rank r's loaded graphs); returns the final environment. */
export async function runTensorParallel(ranks: readonly LoadedModel[], inputs: Env): Promise<Env> {
  const t = tp(ranks[0]!.manifest);
  if (ranks.length !== t.degree) throw modelErrors.invalid(`need ${t.degree} ranks, got ${ranks.length}`);
  const env: Env = { ...inputs };
  for (const stage of t.stages) {
    const results = await Promise.all(ranks.map((m, r) => runStage(m, stage, r, env)));
    applyStage(env, stage, results);
  }
  return env;
}
