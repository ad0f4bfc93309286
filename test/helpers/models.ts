/**
 * The project's built models for tests: builds them (cached by source hash) into $CORNSERVE_MODELS_DIR or
 * <repo>/.models once per process and returns folder paths.
 */
import { join } from 'node:path';
import { buildModels } from '../../executors/models/build.js';
import { defaultModelsDir } from '../../executors/models/catalog.js';

let built: Promise<string> | undefined;

export function modelsDir(): Promise<string> {
  built ??= buildModels().then(() => defaultModelsDir());
  return built;
}

export async function modelDir(name: 'tiny-vision' | 'tiny-audio' | 'tiny-image-gen' | 'tiny-audio-gen' | 'tiny-clip' | 'tiny-siglip' | 'tiny-whisper'): Promise<string> {
  return join(await modelsDir(), name);
}
