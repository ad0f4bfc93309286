/** What every model builder shares: turning built graphs into files + manifest entries, and the projector. */
import type { GraphBuilder } from '../onnx/graph-builder.js';
import { type ParamStore, linear } from '../onnx/layers.js';
import type { DataTypeName } from '../onnx/schema.js';
import type { GraphSpec, ManifestInput, TensorSpec } from '../manifest.js';

const DTYPE: Record<DataTypeName, TensorSpec['dtype']> = {
  FLOAT: 'float32', INT64: 'int64', INT32: 'int32', UINT8: 'uint8', BOOL: 'bool',
};

/**
 * A built model folder before it is written: files by relative path (may contain `/`) plus the manifest; no
 * manifest for folders in the Hugging Face layout (config.json + onnx/*.onnx), which carry their own metadata.
 */
export interface BuiltModel {
  folder: string;
  seed: number;
  files: Map<string, Uint8Array>;
  manifest?: ManifestInput;
}

/** Serialises `g` as `file` into `files` and returns its manifest GraphSpec. */
export function emitGraph(files: Map<string, Uint8Array>, g: GraphBuilder, file: string): GraphSpec {
  files.set(file, g.toBytes());
  const sig = g.signature();
  const spec = (v: { name: string; dtype: DataTypeName; shape: readonly (number | string)[] }): TensorSpec =>
    ({ name: v.name, dtype: DTYPE[v.dtype], shape: [...v.shape] });
  return { file, inputs: sig.inputs.map(spec), outputs: sig.outputs.map(spec) };
}

/** Per-model-id projector (LLaVA-style 2-layer MLP): features [T, din] → embeddings [T, hidden]. */
export function buildProjector(g: GraphBuilder, p: ParamStore, prefix: string, din: number, hidden: number): void {
  const x = g.input('features', 'FLOAT', ['tokens', din]);
  const h = g.gelu(linear(g, p, x, `${prefix}.fc1`, din, hidden));
  g.output(linear(g, p, h, `${prefix}.fc2`, hidden, hidden), 'embeddings', 'FLOAT', ['tokens', hidden]);
}

/** `cornserve/tiny-vlm-a` → `tiny-vlm-a` (for file names). */
export function idSlug(modelId: string): string {
  return modelId.replace(/^.*\//, '').replace(/[^A-Za-z0-9_.-]/g, '_');
}

/** A decoder's size, as both the ONNX (Hugging Face layout) and the GGUF builders take it; weights seeded by `seed`. */
export interface DecoderShape {
  seed: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  layers: number;
  intermediate: number;
}
