/**
 * Memory checks of a scenario, before its run: every executor's devices must hold its component, and every
 * LLM executor's KV cache (what its device leaves, sim/memory/budget.ts) must hold the workload's largest
 * request. A failure is a ScenarioError naming the field and the numbers.
 */
import { ScenarioError } from '../apps/record.js';
import type { RequestKind, RequestSpec } from '../../bench/workload/mix.js';
import { llmTokensOf, type LlmModel, type StageModels } from '../latency/models.js';
import { TP_DEGREES } from '../latency/tensor-parallel.js';
import { encoderBytes, explainShortfall, gib, llmMemory, type DeviceMemory, type EncoderLoad, type MemoryBreakdown } from './budget.js';
import type { ModelSpec } from './specs.js';

export interface ScenarioMemory {
  /** The memory preset's name (sim/memory/models.yaml) and its sizes. */
  model: string;
  spec: ModelSpec;
  /** The device preset's name and memory. */
  deviceName: string;
  device: DeviceMemory;
}

export const batchOf = (m: LlmModel) => ({ maxBatchedTokens: m.maxPrefillTokens, maxSeqs: m.maxBatch });

/** The LLM's memory at every TP degree up to maxTp; refused when none leaves room for a KV cache. */
export function checkLlmFits(mem: ScenarioMemory, llm: LlmModel, maxTp: number): MemoryBreakdown[] {
  const degrees = TP_DEGREES.filter((k) => k <= maxTp);
  const all = degrees.map((k) => llmMemory(mem.spec, mem.device, k, batchOf(llm)));
  if (all.every((b) => b.kvTokens <= 0)) {
    throw new ScenarioError(`memory.model: ${mem.model}'s LLM fits no ${mem.deviceName} (${gib(mem.device.bytes)} × ${mem.device.utilization}) at any TP degree up to the node's ${maxTp} devices: ${all.map((b, i) => `TP ${degrees[i]}: ${explainShortfall(b)}`).join('; ')}`);
  }
  return all;
}

/** The encoder batch a device must hold at its peak: `items` of the workload's largest item. */
export const encoderLoad = (items: number, unitsPerItem: number): EncoderLoad => ({ items: Math.max(1, items), unitsPerItem });

/** An encoder executor on its own k devices: refused when its weights and peak batch do not fit. */
export function checkEncoderFits(mem: ScenarioMemory, label: string, tp: number, load: EncoderLoad): void {
  const e = mem.spec.encoder;
  if (!e) return;
  const b = encoderBytes(e, mem.spec.dtypeBytes, tp, load);
  const usable = mem.device.bytes * mem.device.utilization;
  if (b.weights + b.activations > usable) throw new ScenarioError(`deployment: ${label} at TP ${tp} needs ${gib(b.weights)} of weights + ${gib(b.activations)} of activations (${load.items} items × ${load.unitsPerItem} patches) per device, a ${mem.deviceName} has ${gib(usable)} usable`);
}

/** A generator executor (e.g. a talker and its vocoder): refused when its weights do not fit its devices. */
export function checkGeneratorFits(mem: ScenarioMemory, label: string, tp: number): void {
  const g = mem.spec.generator;
  if (!g) return;
  const weights = (g.params * mem.spec.dtypeBytes) / tp;
  const usable = mem.device.bytes * mem.device.utilization;
  if (weights > usable) throw new ScenarioError(`deployment: ${label} needs ${gib(weights)} of weights per device, a ${mem.deviceName} has ${gib(usable)} usable`);
}

export interface LargestRequest { tokens: number; detail: string; /** The largest media item's encoder units. */ units: number }

/** The workload's longest LLM sequence (prompt + media tokens + output, at the top of each length range). */
export function largestRequest(kinds: readonly RequestKind[], w: { inputLen: number; outputLen: number; rangeRatio: number; image: { width: number; height: number }; audioSeconds: number; videoFrames: number }, models: StageModels, unitsOf: (spec: RequestSpec) => number): LargestRequest {
  const input = Math.ceil(w.inputLen * (1 + w.rangeRatio));
  const output = Math.ceil(w.outputLen * (1 + w.rangeRatio));
  let best: LargestRequest = { tokens: 0, detail: '', units: 0 };
  let units = 0;
  for (const kind of kinds) {
    const spec: RequestSpec = { index: 0, kind, inputTokens: input, outputTokens: output, mediaSeed: 0, ...(kind === 'image' ? { image: w.image } : {}), ...(kind === 'audio' ? { audioSeconds: w.audioSeconds } : {}), ...(kind === 'video' ? { video: { frames: w.videoFrames, ...w.image } } : {}) };
    const u = unitsOf(spec);
    units = Math.max(units, u);
    const media = llmTokensOf(models.encoder, u);
    const tokens = input + media + output;
    if (tokens > best.tokens) best = { tokens, detail: `workload.inputLen ${w.inputLen} × (1 + rangeRatio ${w.rangeRatio}) = ${input}${media ? ` + a${kind === 'image' ? 'n' : ''} ${kind}'s ${media} tokens` : ''} + workload.outputLen ${w.outputLen} × (1 + rangeRatio) = ${output}`, units: 0 };
  }
  return { ...best, units };
}

/** The KV tokens of one LLM executor at TP k (with its encoder inside when `colocated`); refused when the largest request does not fit. */
export function llmKvTokens(mem: ScenarioMemory, label: string, llm: LlmModel, tp: number, largest: LargestRequest, colocated?: EncoderLoad): number {
  const b = llmMemory(mem.spec, mem.device, tp, batchOf(llm), colocated);
  const where = `${label} at TP ${tp} on ${mem.deviceName}${colocated ? ' with its encoder inside' : ''}`;
  if (b.kvTokens <= 0) throw new ScenarioError(`deployment: ${where}: ${explainShortfall(b)}`);
  if (largest.tokens > b.kvTokens) throw new ScenarioError(`workload: a request of up to ${largest.tokens} tokens (${largest.detail}) exceeds the KV cache of ${where}: ${b.kvTokens} tokens (${explainShortfall(b)})`);
  return b.kvTokens;
}
