/**
 * `make models`: builds every project model (ONNX folders and one GGUF file) into <out> (default $CORNSERVE_MODELS_DIR or <repo>/.models).
 * A model folder is rebuilt only when the hash of the builder sources differs from its stamp (or --force).
 * Folders are written to a temp dir and renamed into place, so concurrent builds never see half a folder.
 *
 *   node --import tsx executors/models/build.ts [--out DIR] [--force] [--only tiny-vision,tiny-audio]
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { sleep } from '../../lib/wait.js';
import { MANIFEST_FILE, Manifest } from './manifest.js';
import type { BuiltModel } from './builders/common.js';
import { buildVision } from './builders/vision.js';
import { buildAudio } from './builders/audio.js';
import { buildImageGen } from './builders/image-gen.js';
import { buildAudioGen } from './builders/audio-gen.js';
import { LLM_SPECS, buildLlm } from './builders/llm.js';
import { TINY_QWEN2, TINY_QWEN2_MERGED, TINY_QWEN2_PAIR, buildHfDecoder } from './builders/hf-decoder.js';
import { TINY_CLIP, TINY_SIGLIP, buildHfVision } from './builders/hf-vision.js';
import { TINY_WHISPER, buildHfWhisper } from './builders/hf-whisper.js';
import { buildHfVlm } from './builders/hf-vlm.js';
import { buildGgufLlama } from './builders/gguf-llama.js';
import { defaultModelsDir } from './catalog.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const STAMP_FILE = '.build-stamp';

export const BUILDERS: Record<string, () => BuiltModel> = {
  'tiny-vision': buildVision,
  'tiny-audio': buildAudio,
  'tiny-image-gen': buildImageGen,
  'tiny-audio-gen': buildAudioGen,
  'tiny-lm-a': () => buildLlm(LLM_SPECS['tiny-lm-a']!),
  'tiny-lm-b': () => buildLlm(LLM_SPECS['tiny-lm-b']!),
  'tiny-qwen2': () => buildHfDecoder(TINY_QWEN2),
  'tiny-qwen2-merged': () => buildHfDecoder(TINY_QWEN2_MERGED),
  'tiny-qwen2-pair': () => buildHfDecoder(TINY_QWEN2_PAIR),
  'tiny-clip': () => buildHfVision(TINY_CLIP),
  'tiny-siglip': () => buildHfVision(TINY_SIGLIP),
  'tiny-whisper': () => buildHfWhisper(TINY_WHISPER),
  'tiny-qwen2-vl': buildHfVlm,
  'tiny-llama-gguf': () => buildGgufLlama(),
};

/** sha256 over the builder sources (onnx/, gguf/, builders/, manifest.ts, build.ts), in a fixed order. */
export async function sourceHash(): Promise<string> {
  const h = createHash('sha256');
  const files = [join(HERE, 'manifest.ts'), join(HERE, 'build.ts')];
  for (const sub of ['onnx', 'gguf', 'builders']) {
    for (const f of (await readdir(join(HERE, sub))).filter((f) => f.endsWith('.ts')).sort()) files.push(join(HERE, sub, f));
  }
  for (const f of files) {
    h.update(f.slice(HERE.length));
    h.update(await readFile(f));
  }
  return h.digest('hex').slice(0, 16);
}

async function stampOf(dir: string): Promise<string | undefined> {
  try {
    return (await readFile(join(dir, STAMP_FILE), 'utf8')).trim();
  } catch {
    return undefined;
  }
}

export interface BuildResult { name: string; dir: string; built: boolean; bytes: number; ms: number }

/** Writes a built model as `<out>/<model.folder>` (a benchmark's own configuration, outside BUILDERS). */
export async function writeBuiltModel(out: string, model: BuiltModel): Promise<string> {
  await mkdir(out, { recursive: true });
  await writeModel(out, model, await sourceHash());
  return join(out, model.folder);
}

async function writeModel(out: string, model: BuiltModel, hash: string): Promise<number> {
  const manifest = model.manifest && Manifest.parse({ ...model.manifest, build: { seed: model.seed, source_hash: hash } });
  const final = join(out, model.folder);
  const tmp = join(out, `.${model.folder}.tmp-${process.pid}-${Date.now()}`);
  await mkdir(tmp, { recursive: true });
  let bytes = 0;
  for (const [file, data] of model.files) {
    await mkdir(dirname(join(tmp, file)), { recursive: true });
    await writeFile(join(tmp, file), data);
    bytes += data.byteLength;
  }
  if (manifest) await writeFile(join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  await writeFile(join(tmp, STAMP_FILE), `${hash}\n`);
  await rm(final, { recursive: true, force: true });
  try {
    await rename(tmp, final);
  } catch (e) {
    // Another build won the race; fine if it wrote the same sources.
    await rm(tmp, { recursive: true, force: true });
    if ((await stampOf(final)) !== hash) throw e;
  }
  return bytes;
}

/** One builder per models dir at a time (mkdir is atomic); a lock older than 2 minutes is taken over. */
async function withLock<T>(out: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(out, '.build.lock');
  const deadline = Date.now() + 150_000;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > 120_000) await rm(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      else await sleep(100);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Builds (or keeps, when the stamp matches) each model; returns what happened per model. */
export async function buildModels(opts: { out?: string; force?: boolean; only?: string[] } = {}): Promise<BuildResult[]> {
  const out = resolve(opts.out ?? defaultModelsDir());
  await mkdir(out, { recursive: true });
  return withLock(out, () => buildUnlocked(out, opts));
}

async function buildUnlocked(out: string, opts: { force?: boolean; only?: string[] }): Promise<BuildResult[]> {
  const hash = await sourceHash();
  const names = opts.only?.length ? opts.only : Object.keys(BUILDERS);
  const results: BuildResult[] = [];
  for (const name of names) {
    const builder = BUILDERS[name];
    if (!builder) throw new Error(`unknown model '${name}' (known: ${Object.keys(BUILDERS).join(', ')})`);
    const dir = join(out, name);
    const t0 = performance.now();
    if (!opts.force && (await stampOf(dir)) === hash) {
      results.push({ name, dir, built: false, bytes: 0, ms: performance.now() - t0 });
      continue;
    }
    const bytes = await writeModel(out, builder(), hash);
    results.push({ name, dir, built: true, bytes, ms: performance.now() - t0 });
  }
  return results;
}

async function main(argv: string[]): Promise<void> {
  const cmd = new Command('build-models')
    .description('Build the project\'s small ONNX models (seeded, deterministic) into a models directory.')
    .option('-o, --out <dir>', 'output directory (default: $CORNSERVE_MODELS_DIR or <repo>/.models)')
    .option('-f, --force', 'rebuild even when the source hash matches the stamp', false)
    .option('--only <names>', `comma-separated subset of: ${Object.keys(BUILDERS).join(', ')}`)
    .parse(argv);
  const o = cmd.opts<{ out?: string; force: boolean; only?: string }>();
  const results = await buildModels({ out: o.out, force: o.force, only: o.only?.split(',').map((s) => s.trim()).filter(Boolean) });
  for (const r of results) {
    console.log(r.built
      ? `built   ${r.name.padEnd(16)} ${(r.bytes / 1e6).toFixed(2).padStart(6)} MB  ${r.ms.toFixed(0)} ms  → ${r.dir}`
      : `cached  ${r.name.padEnd(16)} (sources unchanged)  → ${r.dir}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
