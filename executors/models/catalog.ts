/**
 * Finds the model folder serving a model id + modality under the models dir
 * ($CORNSERVE_MODELS_DIR, default <repo>/.models). Any folder with a valid manifest.json one level down counts.
 */
import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isModelError, modelErrors } from './errors.js';
import { loadManifest } from './loader.js';
import type { Family, Manifest, Modality } from './manifest.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function defaultModelsDir(): string {
  return resolve(process.env.CORNSERVE_MODELS_DIR || join(REPO, '.models'));
}

export interface CatalogEntry { dir: string; manifest: Manifest }
export interface Catalog { entries: CatalogEntry[]; invalid: { dir: string; message: string }[] }

/** Every model folder under `modelsDir` (sorted by name); folders with an invalid manifest are listed apart. */
export async function listModels(modelsDir = defaultModelsDir()): Promise<Catalog> {
  const out: Catalog = { entries: [], invalid: [] };
  let names: string[];
  try {
    names = (await readdir(modelsDir, { withFileTypes: true })).filter((d) => d.isDirectory() && !d.name.startsWith('.')).map((d) => d.name).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    const dir = join(modelsDir, name);
    try {
      out.entries.push({ dir, manifest: await loadManifest(dir) });
    } catch (e) {
      if (isModelError(e) && e.code === 'MODEL_NOT_FOUND') continue; // not a model folder
      out.invalid.push({ dir, message: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}

/**
 * The folder serving `modelId` for `modality`; MODEL_NOT_FOUND names what was searched. Give `family` when
 * several kinds of folder take the same modality (an LLM that accepts image embeddings vs the vision encoder).
 */
export async function findModel(modelId: string, modality: Modality, modelsDir = defaultModelsDir(), family?: Family): Promise<CatalogEntry> {
  const cat = await listModels(modelsDir);
  const hit = cat.entries.find((e) => (!family || e.manifest.family === family) && e.manifest.modalities.includes(modality) && modelId in e.manifest.model_ids);
  if (hit) return hit;
  const served = cat.entries.map((e) => `${e.manifest.name} (${e.manifest.modalities.join('/')}: ${Object.keys(e.manifest.model_ids).join(', ')})`);
  throw modelErrors.notFound(`no model folder in ${modelsDir} serves '${modelId}' for modality '${modality}'`, {
    modelsDir, modelId, modality, served, invalid: cat.invalid,
  });
}
