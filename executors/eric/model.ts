/**
 * The model folder Eric serves: an encoder (vision-encoder for image/video, audio-encoder for audio) that
 * serves the base model id and every adapter id for the modality. The catalog's findModel would also match
 * an LLM folder that accepts embeddings of the same model id, so Eric filters by family.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type CatalogEntry, defaultModelsDir, listModels, resolveModelFolder } from '../models/catalog.js';
import { hfEncoderManifest } from '../models/hf-encoder.js';
import { inspectHfFolder, isHfFolder } from '../models/hf-folder.js';
import { modelErrors } from '../models/errors.js';
import { type Family, MANIFEST_FILE } from '../models/manifest.js';
import type { EricModality } from './options.js';

const FAMILY: Record<EricModality, Family> = { image: 'vision-encoder', video: 'vision-encoder', audio: 'audio-encoder' };

/**
 * A Hugging Face vision tower or split VLM (its vision_encoder) that the first model id names (a folder path, or a folder under $CORNSERVE_MODELS /
 * `cornserve up --models`; catalog.ts resolveModelFolder), served under every given id; undefined when the id
 * names no Hugging Face folder.
 */
async function findHfTower(modelIds: readonly string[], modality: EricModality, modelsDir: string): Promise<CatalogEntry | undefined> {
  const dir = await resolveModelFolder(modelIds[0]!, { modality, family: FAMILY[modality], builtinDir: modelsDir }).catch(() => undefined);
  if (!dir || !(await isHfFolder(dir)) || (await stat(join(dir, MANIFEST_FILE)).then(() => true, () => false))) return undefined;
  const kind = (await inspectHfFolder(dir)).kind;
  if ((kind === 'audio-encoder') !== (modality === 'audio') || modality === 'video') {
    throw modelErrors.unsupported(`${dir}: a Hugging Face ${kind} folder does not take ${modality}`);
  }
  for (const id of modelIds.slice(1)) {
    const other = await resolveModelFolder(id, { modality, family: FAMILY[modality], builtinDir: modelsDir }).catch(() => undefined);
    if (other !== dir) throw modelErrors.unsupported(`model ids ${modelIds[0]} and ${id} name different folders; one Eric serves one Hugging Face folder`);
  }
  return { dir, manifest: await hfEncoderManifest(await inspectHfFolder(dir), modelIds) };
}

export async function findEncoder(modelIds: readonly string[], modality: EricModality, tpSize: number, modelsDir = defaultModelsDir()): Promise<CatalogEntry> {
  const hf = await findHfTower(modelIds, modality, modelsDir);
  if (hf) {
    if (tpSize > 1) throw modelErrors.unsupported(`model '${hf.manifest.name}' (a Hugging Face folder) has no tensor-parallel shards of degree ${tpSize}`);
    return hf;
  }
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
