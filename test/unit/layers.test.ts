/**
 * The layers (docs/architecture.md, "Layers"): dependency-cruiser checks every import of the repository against
 * .dependency-cruiser.cjs, and the same rules reject an import that runs upward or a circle between folders.
 */
import test, { type ExecutionContext } from 'ava';
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../helpers/repo.js';
import { makeOwnedTempDir } from '../../lib/temp-dirs.js';

const run = promisify(execFile);
const DEPCRUISE = join(repoRoot, 'node_modules', '.bin', 'depcruise');
const CONFIG = join(repoRoot, '.dependency-cruiser.cjs');
const FOLDERS = ['lib', 'policies', 'functions', 'executors', 'sidecar', 'control', 'knative', 'bench', 'sim', 'plan', 'experiment', 'examples'];

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** depcruise's violations for `folders` under `cwd`, with the repository's rules. */
async function violations(cwd: string, folders: string[]): Promise<Violation[]> {
  // depcruise exits non-zero when it finds violations; the JSON report on stdout is read either way.
  const { stdout } = await run(DEPCRUISE, ['--config', CONFIG, '--output-type', 'json', ...folders], { cwd, maxBuffer: 256 << 20 }).catch(
    (e: { stdout?: string }) => {
      if (!e.stdout) throw e;
      return { stdout: e.stdout };
    },
  );
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

/** A throwaway tree of modules (path → source) with a tsconfig, to run the rules on; removed after the test. */
async function tree(t: ExecutionContext, files: Record<string, string>): Promise<string> {
  const dir = await makeOwnedTempDir('cs-layers-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  for (const [file, source] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await writeFile(join(dir, file), source);
  }
  return dir;
}

const describe = (vs: Violation[]) => vs.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).join('\n');

test('every import of the repository follows the layers', async (t) => {
  const vs = await violations(repoRoot, FOLDERS);
  t.deepEqual(vs, [], describe(vs));
});

test('an import from the contracts up into the CLI breaks a layer rule', async (t) => {
  const dir = await tree(t, {
    'lib/deadline.ts': "import { main } from '../control/cli/main.js';\nexport const d = main;\n",
    'control/cli/main.ts': 'export const main = 1;\n',
  });
  const vs = await violations(dir, ['lib', 'control']);
  t.deepEqual(vs.map((v) => [v.rule.name, v.from, v.to]), [['contracts-import-only-contracts', 'lib/deadline.ts', 'control/cli/main.ts']], describe(vs));
});

test('a policy importing a component breaks a layer rule', async (t) => {
  const dir = await tree(t, {
    'policies/pick.ts': "import { store } from '../control/store/memory.js';\nexport const p = store;\n",
    'control/store/memory.ts': 'export const store = 1;\n',
  });
  const vs = await violations(dir, ['policies', 'control']);
  t.deepEqual(vs.map((v) => v.rule.name), ['policies-import-only-contracts'], describe(vs));
});

test('a circle between two tool folders breaks the rules', async (t) => {
  const dir = await tree(t, {
    'sim/run.ts': "import { search } from '../plan/search.js';\nexport const run = () => search;\n",
    'plan/search.ts': "import { run } from '../sim/run.js';\nexport const search = () => run;\n",
  });
  const names = (await violations(dir, ['sim', 'plan'])).map((v) => v.rule.name).sort();
  t.true(names.includes('the-simulator-imports-neither-planner-nor-experiment'), names.join(', '));
  t.true(names.includes('no-circle-between-folders'), names.join(', '));
});

test('an import down the layers is allowed', async (t) => {
  const dir = await tree(t, {
    'control/cli/main.ts': "import { deadline } from '../../lib/deadline.js';\nexport const main = deadline;\n",
    'lib/deadline.ts': 'export const deadline = 1;\n',
  });
  t.deepEqual(await violations(dir, ['lib', 'control']), []);
});
