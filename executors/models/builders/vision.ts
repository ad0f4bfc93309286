/**
 * tiny-vision: a Qwen2-VL-style vision encoder. Patches (3 x 2 x 14 x 14, flattened by the TS preprocessing in
 * 2x2 merge-window order) → patch embedding + learned 2D position tables → pre-LN transformer blocks with
 * block-diagonal attention (segment_ids) → 2x2 spatial merge + MLP → features; one projector graph per model id.
 * Also emits the body split for tensor-parallel degree 2 (Megatron-style shards).
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ParamStore, attention, layerNorm, linear, mlp, segmentMask, transformerBlock } from '../onnx/layers.js';
import type { GraphSpec, ManifestInput } from '../manifest.js';
import { type BuiltModel, buildProjector, emitGraph, idSlug } from './common.js';

export const VISION = {
  seed: 1001,
  patchSize: 14,
  temporalPatch: 2,
  merge: 2,
  channels: 3,
  dim: 96,
  heads: 4,
  mlpHidden: 384,
  depth: 2,
  maxGridSide: 256,
  adapters: { 'cornserve/tiny-vlm-a': 256, 'cornserve/tiny-vlm-b': 192 } as Record<string, number>,
  image: { minPixels: 56 * 56, maxPixels: 448 * 448 },
  video: { maxFrames: 32, minPixels: 56 * 56, maxPixels: 224 * 224 },
  maxPatchesPerRun: 512,
  mean: [0.48145466, 0.4578275, 0.40821073] as [number, number, number],
  std: [0.26862954, 0.26130258, 0.27577711] as [number, number, number],
  tpDegree: 2,
};

const PATCH_DIM = VISION.channels * VISION.temporalPatch * VISION.patchSize * VISION.patchSize;
const MERGED_DIM = VISION.dim * VISION.merge * VISION.merge;
const BLOCK = { dim: VISION.dim, heads: VISION.heads, mlpHidden: VISION.mlpHidden };

/** patches @ W + row_table[row] + col_table[col] → hidden [N, dim]. */
function embed(g: GraphBuilder, p: ParamStore): string {
  const patches = g.input('patches', 'FLOAT', ['num_patches', PATCH_DIM]);
  const pos = g.input('position_ids', 'INT64', ['num_patches', 2]);
  const x = linear(g, p, patches, 'patch_embed', PATCH_DIM, VISION.dim, { bias: false });
  const table = (name: string) => g.initializer(name, p.get(name, [VISION.maxGridSide, VISION.dim], 'bias'), [VISION.maxGridSide, VISION.dim]);
  const rows = g.gather(table('pos_embed.row'), g.gather(pos, g.constI64([0], []), 1));
  const cols = g.gather(table('pos_embed.col'), g.gather(pos, g.constI64([1], []), 1));
  return g.add(g.add(x, rows), cols);
}

/** LN → 2x2 merge (consecutive groups of merge² patches) → MLP → features [N / merge², MERGED_DIM]. */
function merger(g: GraphBuilder, p: ParamStore, hidden: string): string {
  const merged = g.reshape(layerNorm(g, p, hidden, 'merger.ln', VISION.dim), [-1, MERGED_DIM]);
  return linear(g, p, g.gelu(linear(g, p, merged, 'merger.fc1', MERGED_DIM, MERGED_DIM)), 'merger.fc2', MERGED_DIM, MERGED_DIM);
}

const FEATURES_SHAPE = ['tokens', MERGED_DIM];

function buildEncoder(p: ParamStore): GraphBuilder {
  const g = new GraphBuilder('tiny-vision-encoder');
  let x = embed(g, p);
  const mask = segmentMask(g, g.input('segment_ids', 'INT64', ['num_patches']));
  for (let l = 0; l < VISION.depth; l++) x = transformerBlock(g, p, x, mask, `blocks.${l}`, BLOCK);
  g.output(merger(g, p, x), 'features', 'FLOAT', FEATURES_SHAPE);
  return g;
}

/** Stage graphs for tensor parallelism: name → builder. Stage order is returned alongside. */
function buildTensorParallel(p: ParamStore, degree: number) {
  const graphs = new Map<string, GraphBuilder>();
  const stages: { name: string; kind: 'replicated' | 'partial-sum'; graphs: string[] }[] = [];
  const hiddenShape = ['num_patches', VISION.dim];

  const emb = new GraphBuilder('tp-embed');
  emb.output(embed(emb, p), 'hidden', 'FLOAT', hiddenShape);
  graphs.set('tp.embed', emb);
  stages.push({ name: 'embed', kind: 'replicated', graphs: Array(degree).fill('tp.embed') });

  const headsPer = VISION.heads / degree;
  const colsPer = VISION.mlpHidden / degree;
  for (let l = 0; l < VISION.depth; l++) {
    const attnNames: string[] = [];
    const mlpNames: string[] = [];
    for (let r = 0; r < degree; r++) {
      const a = new GraphBuilder(`tp-r${r}-block${l}-attn`);
      const h = a.input('hidden', 'FLOAT', hiddenShape);
      const mask = segmentMask(a, a.input('segment_ids', 'INT64', ['num_patches']));
      const part = attention(a, p, layerNorm(a, p, h, `blocks.${l}.ln1`, VISION.dim), mask, `blocks.${l}.attn`, BLOCK, {
        headRange: [r * headsPer, (r + 1) * headsPer], outBias: r === 0,
      });
      a.output(part, 'partial', 'FLOAT', hiddenShape);
      graphs.set(`tp.r${r}.block${l}.attn`, a);
      attnNames.push(`tp.r${r}.block${l}.attn`);

      const m = new GraphBuilder(`tp-r${r}-block${l}-mlp`);
      const hm = m.input('hidden', 'FLOAT', hiddenShape);
      const mp = mlp(m, p, layerNorm(m, p, hm, `blocks.${l}.ln2`, VISION.dim), `blocks.${l}.mlp`, VISION.dim, VISION.mlpHidden, {
        colRange: [r * colsPer, (r + 1) * colsPer], outBias: r === 0,
      });
      m.output(mp, 'partial', 'FLOAT', hiddenShape);
      graphs.set(`tp.r${r}.block${l}.mlp`, m);
      mlpNames.push(`tp.r${r}.block${l}.mlp`);
    }
    stages.push({ name: `block${l}.attn`, kind: 'partial-sum', graphs: attnNames });
    stages.push({ name: `block${l}.mlp`, kind: 'partial-sum', graphs: mlpNames });
  }

  const head = new GraphBuilder('tp-head');
  head.output(merger(head, p, head.input('hidden', 'FLOAT', hiddenShape)), 'features', 'FLOAT', FEATURES_SHAPE);
  graphs.set('tp.head', head);
  stages.push({ name: 'head', kind: 'replicated', graphs: Array(degree).fill('tp.head') });
  return { graphs, stages };
}

export function buildVision(): BuiltModel {
  const p = new ParamStore(VISION.seed);
  const files = new Map<string, Uint8Array>();
  const graphs: Record<string, GraphSpec> = { encoder: emitGraph(files, buildEncoder(p), 'encoder.onnx') };

  const model_ids: ManifestInput['model_ids'] = {};
  for (const [id, hidden] of Object.entries(VISION.adapters)) {
    const g = new GraphBuilder(`projector-${idSlug(id)}`);
    buildProjector(g, p, `projector.${idSlug(id)}`, MERGED_DIM, hidden);
    model_ids[id] = { hidden_size: hidden, graphs: { projector: emitGraph(files, g, `projector-${idSlug(id)}.onnx`) } };
  }

  const tp = buildTensorParallel(p, VISION.tpDegree);
  for (const [name, g] of tp.graphs) graphs[name] = emitGraph(files, g, `${name}.onnx`);

  const manifest: ManifestInput = {
    schema_version: 1,
    name: 'tiny-vision',
    family: 'vision-encoder',
    modalities: ['image', 'video'],
    dtype: 'float32',
    graphs,
    model_ids,
    preprocessing: {
      image: {
        layout: 'patches',
        patch_size: VISION.patchSize,
        temporal_patch_size: VISION.temporalPatch,
        merge_size: VISION.merge,
        min_pixels: VISION.image.minPixels,
        max_pixels: VISION.image.maxPixels,
        mean: VISION.mean,
        std: VISION.std,
        max_grid_side: VISION.maxGridSide,
        max_patches_per_run: VISION.maxPatchesPerRun,
      },
      video: { max_frames: VISION.video.maxFrames, min_pixels: VISION.video.minPixels, max_pixels: VISION.video.maxPixels },
    },
    tensor_parallel: { degree: VISION.tpDegree, stages: tp.stages },
    config: { embed_dim: VISION.dim, heads: VISION.heads, depth: VISION.depth, mlp_hidden: VISION.mlpHidden, features_dim: MERGED_DIM },
  };
  return { folder: 'tiny-vision', seed: VISION.seed, files, manifest };
}
