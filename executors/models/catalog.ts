/**
 * Finds the model folder serving a model id + modality under the models dir
 * ($CORNSERVE_MODELS_DIR, default <repo>/.models). Any folder with a valid manifest.json one level down counts.
 */
import { readdir, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isModelError, modelErrors } from './errors.js';
import { loadManifest } from './loader.js';
import { inspectHfFolder, isHfFolder, type HfFolder } from './hf-folder.js';
import { MANIFEST_FILE } from './manifest.js';
import { MODELS_ENV, modelDirs } from './model-dirs.js';

export { MODELS_ENV, modelDirs };
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

const isDir = (p: string) => stat(p).then((s) => s.isDirectory(), () => false);
const hasManifest = (dir: string) => stat(join(dir, MANIFEST_FILE)).then(() => true, () => false);

/** A folder either kind of loader opens: a manifest folder or a Hugging Face export. */
export async function isModelFolder(dir: string): Promise<boolean> {
  return (await isDir(dir)) && ((await hasManifest(dir)) || (await isHfFolder(dir)));
}

export interface ResolveOptions {
  modality: Modality;
  family?: Family;
  /** Directories searched by name (default: $CORNSERVE_MODELS). */
  dirs?: readonly string[];
  /** Where the built-in tiny models are (default: $CORNSERVE_MODELS_DIR or <repo>/.models). */
  builtinDir?: string;
}

/**
 * The folder a task's `modelId` names, in order: (1) a folder path (absolute, or relative that exists);
 * (2) `<dir>/<modelId>` under the model directories (`Qwen/Qwen2.5-0.5B-Instruct` may be nested), or a manifest
 * folder there serving the id; (3) the built-in tiny models (a manifest folder serving the id, or a Hugging Face
 * folder of that name, e.g. `tiny-clip`). MODEL_NOT_FOUND names everything searched.
 */
export async function resolveModelFolder(modelId: string, opts: ResolveOptions): Promise<string> {
  const asPath = resolve(modelId);
  if ((isAbsolute(modelId) || modelId.startsWith('.') || (await isDir(asPath))) && (await isModelFolder(asPath))) return asPath;
  if (isAbsolute(modelId) || modelId.startsWith('.')) {
    throw modelErrors.notFound(`model folder ${asPath} does not exist or holds neither manifest.json nor config.json with ONNX parts`, { modelId });
  }
  const dirs = opts.dirs ?? modelDirs();
  for (const d of dirs) {
    const candidate = join(d, modelId);
    if (await isModelFolder(candidate)) return candidate;
    const hit = await findModel(modelId, opts.modality, d, opts.family).catch(() => undefined);
    if (hit) return hit.dir;
  }
  // Built-in folders in the Hugging Face layout (tiny-qwen2, tiny-clip, ...) are named by their folder name.
  const builtin = join(opts.builtinDir ?? defaultModelsDir(), modelId);
  if (!modelId.startsWith('.') && (await isHfFolder(builtin))) return builtin;
  try {
    return (await findModel(modelId, opts.modality, opts.builtinDir, opts.family)).dir;
  } catch (e) {
    if (!isModelError(e) || e.code !== 'MODEL_NOT_FOUND') throw e;
    throw modelErrors.notFound(
      `model '${modelId}' is not a folder path, not a folder under the model directories (${dirs.length ? dirs.join(', ') : `none: pass --models DIR or set ${MODELS_ENV}`}), and not a built-in model: ${e.message}`,
      { modelId, dirs, ...e.details },
    );
  }
}

/** One row of `cornserve models`: what a folder holds. */
export interface ModelFolderInfo {
  name: string;
  dir: string;
  layout: 'manifest' | 'hugging-face';
  family: string;
  parts: string[];
  dtypes: string[];
  bytes: number;
  /** Why the folder cannot be used (unreadable config, no recognised part). */
  error?: string;
}

async function folderBytes(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? await folderBytes(p) : (await stat(p)).size;
  }
  return n;
}

function hfInfo(f: HfFolder): ModelFolderInfo {
  const dtypes = [...new Set(Object.values(f.parts).flatMap((l) => l.map((p) => p.dtype)))];
  return {
    name: f.name, dir: f.dir, layout: 'hugging-face', family: `${f.kind} (${f.modelType})`,
    parts: Object.values(f.parts).flatMap((l) => l.map((p) => p.file)), dtypes, bytes: f.bytes,
  };
}

/** Describes one folder (either layout). */
export async function describeFolder(dir: string): Promise<ModelFolderInfo> {
  const name = dir.split(/[\\/]/).filter(Boolean).pop() ?? dir;
  try {
    if (await hasManifest(dir)) {
      const m = await loadManifest(dir);
      return {
        name, dir, layout: 'manifest', family: m.family, parts: Object.values(m.graphs).map((g) => g.file),
        dtypes: [m.dtype], bytes: await folderBytes(dir),
      };
    }
    return hfInfo(await inspectHfFolder(dir));
  } catch (e) {
    return { name, dir, layout: (await hasManifest(dir)) ? 'manifest' : 'hugging-face', family: '?', parts: [], dtypes: [], bytes: 0, error: (e as Error).message };
  }
}

/** Every model folder directly under `dir` and one level deeper (`org/name`), sorted by name. */
export async function scanModelFolders(dir: string): Promise<ModelFolderInfo[]> {
  const out: ModelFolderInfo[] = [];
  const visit = async (d: string, depth: number) => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if ((await hasManifest(p)) || (await stat(join(p, 'config.json')).then(() => true, () => false))) {
        const info = await describeFolder(p);
        out.push({ ...info, name: p.slice(dir.length + 1) });
      } else if (depth < 1) await visit(p, depth + 1);
    }
  };
  await visit(resolve(dir), 0);
  return out;
}
