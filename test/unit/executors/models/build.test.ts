import test from 'ava';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STAMP_FILE, buildModels } from '../../../../executors/models/build.js';
import { isHfFolder } from '../../../../executors/models/hf-folder.js';
import { loadManifest } from '../../../../executors/models/loader.js';

const dirs: string[] = [];
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'cs-build-'));
  dirs.push(d);
  return d;
}
test.after.always(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

test('a second build with unchanged sources is cached', async (t) => {
  const out = await tmp();
  const first = await buildModels({ out, only: ['tiny-audio-gen'] });
  const second = await buildModels({ out, only: ['tiny-audio-gen'] });
  t.true(first[0]!.built);
  t.false(second[0]!.built);
});

test('--force rebuilds byte-identical files', async (t) => {
  const out = await tmp();
  await buildModels({ out, only: ['tiny-vision'] });
  const dir = join(out, 'tiny-vision');
  const before = await readFile(join(dir, 'encoder.onnx'));
  const res = await buildModels({ out, only: ['tiny-vision'], force: true });
  t.true(res[0]!.built);
  t.true((await readFile(join(dir, 'encoder.onnx'))).equals(before));
});

const HF_LAYOUT = ['tiny-qwen2', 'tiny-qwen2-merged', 'tiny-qwen2-pair', 'tiny-qwen2-vl', 'tiny-clip', 'tiny-siglip', 'tiny-whisper'];
/** Folders holding one GGUF file (llama.cpp's layout): no manifest, the file's own header says what it is. */
const GGUF_LAYOUT = ['tiny-llama-gguf'];

test('every built model has a valid manifest (or, in the Hugging Face layout, config.json and ONNX parts) and a stamp', async (t) => {
  const out = await tmp();
  await buildModels({ out });
  const names = (await readdir(out)).filter((n) => !n.startsWith('.')).sort();
  t.deepEqual(names, ['tiny-audio', 'tiny-audio-gen', 'tiny-image-gen', 'tiny-lm-a', 'tiny-lm-b', ...HF_LAYOUT, ...GGUF_LAYOUT, 'tiny-vision'].sort());
  for (const n of names) {
    t.is((await readFile(join(out, n, STAMP_FILE), 'utf8')).trim().length, 16);
    if (HF_LAYOUT.includes(n)) {
      t.true(await isHfFolder(join(out, n)), n);
      continue;
    }
    if (GGUF_LAYOUT.includes(n)) {
      const ggufs = (await readdir(join(out, n))).filter((f) => f.endsWith('.gguf'));
      t.is(ggufs.length, 1, n);
      t.is((await readFile(join(out, n, ggufs[0]!))).subarray(0, 4).toString('latin1'), 'GGUF', n);
      continue;
    }
    const m = await loadManifest(join(out, n));
    t.is(m.name, n);
    t.is(m.build?.source_hash.length, 16);
  }
});

test('an unknown model name is refused', async (t) => {
  await t.throwsAsync(buildModels({ out: await tmp(), only: ['tiny-toaster'] }), { message: /unknown model/ });
});
