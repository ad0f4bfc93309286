/**
 * Model memory presets (sim/memory/models.yaml): the published sizes of each component of a model, every number
 * with its source. They give each executor's weights, activation workspace and KV bytes per token
 * (sim/memory/budget.ts), and scale a device preset's latency rows, profiled on one model, to the model run.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const count = z.number().positive();
const int = z.number().int().positive();

export const encoderSpecSchema = z.object({
  params: count,
  layers: int,
  hidden: int,
  intermediate: int,
  patchSize: int,
  llmTokensPerUnit: z.number().positive(),
  fullAttentionLayers: int,
  /** Images cut into tiles of size × size (InternVL's dynamic tiling, up to maxTiles, plus a thumbnail). */
  tile: z.object({ size: int, maxTiles: int, thumbnail: z.boolean() }).strict().optional(),
}).strict();

export const llmSpecSchema = z.object({
  params: count,
  /** A mixture of experts: parameters one token runs through (compute); all of `params` are held. */
  activeParams: count.optional(),
  layers: int,
  hidden: int,
  intermediate: int,
  kvHeads: int,
  headDim: int,
  vocab: int,
}).strict();

export const modelSpecSchema = z.object({
  dtypeBytes: z.number().positive(),
  encoder: encoderSpecSchema.optional(),
  llm: llmSpecSchema,
  /** The generator stage (e.g. a talker and its vocoder): weights only. */
  generator: z.object({ params: count }).strict().optional(),
  /** Where each number comes from, keyed by its field's path (`llm.layers`). */
  sources: z.record(z.string(), z.string().min(1)),
}).strict();

export type EncoderSpec = z.infer<typeof encoderSpecSchema>;
export type LlmSpec = z.infer<typeof llmSpecSchema>;
export type ModelSpec = z.infer<typeof modelSpecSchema>;

export const MODEL_SPECS_FILE = fileURLToPath(new URL('./models.yaml', import.meta.url));

let cached: Record<string, ModelSpec> | undefined;

export function loadModelSpecs(): Record<string, ModelSpec> {
  if (cached) return cached;
  const r = z.object({ models: z.record(z.string(), modelSpecSchema) }).strict().safeParse(parseYaml(readFileSync(MODEL_SPECS_FILE, 'utf8')));
  if (!r.success) throw new Error(`sim/memory/models.yaml: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  cached = r.data.models;
  return cached;
}

/** Every numeric or boolean field's path in a spec (`encoder.tile.size`), the keys its `sources` must have. */
export function numberPaths(spec: ModelSpec): string[] {
  const out: string[] = [];
  const walk = (o: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(o)) {
      if (k === 'sources') continue;
      const path = prefix ? `${prefix}.${k}` : k;
      if (v !== null && typeof v === 'object') walk(v as Record<string, unknown>, path);
      else out.push(path);
    }
  };
  walk(spec as unknown as Record<string, unknown>, '');
  return out;
}

/** KV-cache bytes one token takes in the whole model: layers × KV heads × head dim × 2 (K and V) × dtype bytes. */
export const kvBytesPerToken = (spec: ModelSpec) => spec.llm.layers * spec.llm.kvHeads * spec.llm.headDim * 2 * spec.dtypeBytes;

/**
 * Tiles of an image as InternVL's dynamic_preprocess cuts it: the grid (i × j ≤ maxTiles) whose aspect ratio is
 * closest to the image's (on a tie the larger grid when the image has more than half its pixels), plus a
 * thumbnail when there is more than one tile.
 */
export function tilesOf(width: number, height: number, tile: NonNullable<EncoderSpec['tile']>): number {
  const aspect = width / height;
  let best = { i: 1, j: 1 };
  let bestDiff = Infinity;
  const grids: Array<{ i: number; j: number }> = [];
  for (let n = 1; n <= tile.maxTiles; n++) for (let i = 1; i <= n; i++) for (let j = 1; j <= n; j++) if (i * j <= tile.maxTiles && i * j >= 1) grids.push({ i, j });
  const seen = new Set<string>();
  for (const g of grids.sort((a, b) => a.i * a.j - b.i * b.j)) {
    const key = `${g.i}x${g.j}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const diff = Math.abs(aspect - g.i / g.j);
    if (diff < bestDiff) {
      bestDiff = diff;
      best = g;
    } else if (diff === bestDiff && width * height > 0.5 * tile.size * tile.size * g.i * g.j) best = g;
  }
  const n = best.i * best.j;
  return n + (tile.thumbnail && n > 1 ? 1 : 0);
}
