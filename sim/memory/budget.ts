/**
 * Device memory of one executor, per device of its tensor-parallel group, as vLLM budgets it: the usable share
 * of the device (gpu_memory_utilization) minus the weights (split k ways at TP k), minus the activation
 * workspace of the largest batch it profiles, minus whatever else runs on the device (a co-located encoder's
 * weights and activations); what is left is KV cache. Pure: sizes in, bytes and tokens out.
 */
import { kvBytesPerToken, type EncoderSpec, type ModelSpec } from './specs.js';

export interface DeviceMemory {
  /** Bytes of device memory (the device preset's). */
  bytes: number;
  /** Share vLLM may use (gpu_memory_utilization, 0.9 by default). */
  utilization: number;
}

/** An encoder batch at its peak: items and encoder units (patches) per item. */
export interface EncoderLoad { items: number; unitsPerItem: number }

export interface MemoryBreakdown {
  /** Per device of the group. */
  usableBytes: number;
  weightsBytes: number;
  activationBytes: number;
  /** A co-located encoder's weights and activations (0 when it has its own devices). */
  colocatedBytes: number;
  /** What is left for the KV cache, per device (negative: the rest does not fit). */
  kvBytes: number;
  /** KV-cache tokens the whole group holds (0 when kvBytes ≤ 0). */
  kvTokens: number;
}

const usable = (d: DeviceMemory) => d.bytes * d.utilization;

/** An encoder's weights and peak activations on each of its k devices (hidden-size tensors are kept whole, MLP shards split). */
export function encoderBytes(e: EncoderSpec, dtypeBytes: number, tp: number, load: EncoderLoad): { weights: number; activations: number } {
  const units = load.items * load.unitsPerItem;
  return { weights: (e.params * dtypeBytes) / tp, activations: units * (4 * e.hidden + e.intermediate / tp) * dtypeBytes };
}

/**
 * The LLM's budget on one device of its TP group: weights ÷ k; activations of a maxBatchedTokens forward pass
 * (hidden-size tensors, the MLP's two intermediate tensors ÷ k) plus float32 logits for maxSeqs sequences; a
 * co-located encoder's share; the rest holds KV, each token taking its layers × KV heads ÷ k (at least one head)
 * × head dim × 2 × dtype bytes on every device.
 */
export function llmMemory(spec: ModelSpec, device: DeviceMemory, tp: number, batch: { maxBatchedTokens: number; maxSeqs: number }, colocated?: EncoderLoad): MemoryBreakdown {
  const l = spec.llm;
  const weightsBytes = (l.params * spec.dtypeBytes) / tp;
  const activationBytes = batch.maxBatchedTokens * (4 * l.hidden + (2 * l.intermediate) / tp) * spec.dtypeBytes + batch.maxSeqs * l.vocab * 4;
  let colocatedBytes = 0;
  if (colocated && spec.encoder) {
    const e = encoderBytes(spec.encoder, spec.dtypeBytes, tp, colocated);
    colocatedBytes = e.weights + e.activations;
  }
  const usableBytes = usable(device);
  const kvBytes = usableBytes - weightsBytes - activationBytes - colocatedBytes;
  const perTokenPerDevice = (kvBytesPerToken(spec) / l.kvHeads) * Math.max(1, l.kvHeads / tp);
  return { usableBytes, weightsBytes, activationBytes, colocatedBytes, kvBytes, kvTokens: kvBytes > 0 ? Math.floor(kvBytes / perTokenPerDevice) : 0 };
}

export const GIB = 1024 ** 3;
/** Bytes as GiB with one decimal, for messages. */
export const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

/** Why a breakdown leaves no KV cache, in words: which part takes the device. */
export function explainShortfall(b: MemoryBreakdown): string {
  const parts = [`weights ${gib(b.weightsBytes)}`, `activations ${gib(b.activationBytes)}`, ...(b.colocatedBytes > 0 ? [`co-located encoder ${gib(b.colocatedBytes)}`] : [])];
  return `${parts.join(' + ')} of ${gib(b.usableBytes)} usable leave ${b.kvBytes > 0 ? `${b.kvTokens} KV tokens` : `${gib(-b.kvBytes)} short`}`;
}
