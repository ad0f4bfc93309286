/**
 * The model folder Eric serves: an encoder (vision-encoder for image/video, audio-encoder for audio) that
 * serves the base model id and every adapter id for the modality. The catalog's findModel would also match
 * an LLM folder that accepts embeddings of the same model id, so Eric filters by family.
 */
import { type CatalogEntry, defaultModelsDir, listModels } from '../models/catalog.js';
import { modelErrors } from '../models/errors.js';
import type { Family } from '../models/manifest.js';
import type { EricModality } from './options.js';

const FAMILY: Record<EricModality, Family> = { image: 'vision-encoder', video: 'vision-encoder', audio: 'audio-encoder' };

export async function findEncoder(modelIds: readonly string[], modality: EricModality, tpSize: number, modelsDir = defaultModelsDir()): Promise<CatalogEntry> {
  const { entries } = await listModels(modelsDir);
  const fits = (e: CatalogEntry) => e.manifest.family === FAMILY[modality] && e.manifest.modalities.includes(modality);
  const hit = entries.find((e) => fits(e) && modelIds.every((id) => id in e.manifest.model_ids));
  if (!hit) {
    const served = entries.filter(fits).map((e) => `${e.manifest.name} (${Object.keys(e.manifest.model_ids).join(', ')})`);
    throw modelErrors.notFound(`no ${FAMILY[modality]} in ${modelsDir} serves ${modelIds.join(', ')} for ${modality}; found: ${served.join('; ') || 'none'}`);
  }
  if (tpSize > 1 && hit.manifest.tensor_parallel?.degree !== tpSize) {
    throw modelErrors.unsupported(`model '${hit.manifest.name}' has no tensor-parallel shards of degree ${tpSize} (has: ${hit.manifest.tensor_parallel?.degree ?? 'none'})`);
  }
  return hit;
}
