/**
 * `cornserve models [DIR...]`: the model folders found (manifest folders and Hugging Face exports) with family,
 * parts, dtypes and size. `cornserve models check FOLDER|NAME`: opens a Hugging Face folder's parts and reports every
 * problem (missing part, unexpected input names, shapes that disagree with config.json) and a decoder's layout
 * (one graph, Optimum's merged decoder, or Optimum's pair); exit code 1 on any problem.
 * Runs locally (no gateway): it reads the folders the executors would read.
 */
import { stat } from 'node:fs/promises';
import { defaultModelsDir, describeFolder, modelDirs, scanModelFolders, type ModelFolderInfo } from '../../executors/models/catalog.js';
import { DECODER_LAYOUT_TEXT, checkHfFolder, isHfFolder } from '../../executors/models/hf-folder.js';
import { loadModel } from '../../executors/models/loader.js';
import { isModelError } from '../../executors/models/errors.js';
import type { Io } from '../../lib/io.js';
import { CliError } from '../../lib/cli-errors.js';
import { table } from '../../lib/table.js';

const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

/** Lists the folders under `dirs` (default: $CORNSERVE_MODELS and the built-in models dir). */
export async function modelsListCommand(dirs: string[], io: Io): Promise<ModelFolderInfo[]> {
  const where = dirs.length ? modelDirs(dirs, '') : [...modelDirs(), defaultModelsDir()];
  const rows: ModelFolderInfo[] = [];
  for (const d of where) rows.push(...(await scanModelFolders(d)).map((r) => ({ ...r, name: r.name })));
  if (!rows.length) {
    io.out(`no model folders in ${where.join(', ')}`);
    return rows;
  }
  io.out(table(['NAME', 'LAYOUT', 'FAMILY', 'DTYPE', 'SIZE', 'PARTS'], rows.map((r) => [
    r.name, r.layout, r.error ? `invalid: ${r.error}` : r.family, r.dtypes.join(','), mb(r.bytes), r.parts.join(' '),
  ])));
  return rows;
}

/** The folder `check` reads: a path that exists, else a name `cornserve models` lists (in the same folders). */
async function folderNamed(arg: string, dirs: string[]): Promise<string> {
  if (await stat(arg).then(() => true, () => false)) return arg;
  for (const d of dirs) {
    const hit = (await scanModelFolders(d)).find((r) => r.name === arg);
    if (hit) return hit.dir;
  }
  throw new CliError(`${arg} does not exist: it is neither a folder nor a model name under ${dirs.join(', ')} (\`cornserve models\` lists the names)`);
}

/** Validates one folder (a path, or a name `cornserve models` lists); throws CliError (exit 1) listing every problem. */
export async function modelsCheckCommand(arg: string, io: Io): Promise<void> {
  const folder = await folderNamed(arg, [...modelDirs(), defaultModelsDir()]);
  if (await isHfFolder(folder)) {
    let report;
    try {
      report = await checkHfFolder(folder);
    } catch (e) {
      throw new CliError(`${folder}: ${(e as Error).message}`);
    }
    const f = report.folder;
    io.out(`${f.dir}: ${f.kind} (${f.modelType}), ${mb(f.bytes)}`);
    if (report.layout) io.out(`  layout: ${report.layout}: ${DECODER_LAYOUT_TEXT[report.layout]}`);
    for (const line of report.checked) io.out(`  checked ${line}`);
    if (report.problems.length) throw new CliError(`${folder}: ${report.problems.length} problem(s):\n${report.problems.map((p) => `  - ${p}`).join('\n')}`);
    io.out('ok');
    return;
  }
  const info = await describeFolder(folder);
  if (info.layout !== 'manifest') throw new CliError(`${folder}: not a model folder (no manifest.json, and no config.json with ONNX parts under onnx/ or beside it)`);
  try {
    const m = await loadModel(folder);
    await m.close();
  } catch (e) {
    throw new CliError(`${folder}: ${isModelError(e) ? e.message : (e as Error).message}`);
  }
  io.out(`${folder}: ${info.family} (manifest), ${mb(info.bytes)}\nok`);
}
