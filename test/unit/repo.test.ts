/**
 * The repository stands on its own: what its files cite exists in it.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../helpers/repo.js';

const run = promisify(execFile);

/** Tracked files citing `name`, as "path:line" (git grep; exit code 1 = none). */
async function citing(name: string): Promise<string[]> {
  try {
    const { stdout } = await run('git', ['grep', '-n', '-F', name, '--', '.', ':!test/unit/repo.test.ts'], { cwd: repoRoot });
    return stdout.split('\n').filter(Boolean).map((l) => l.split(':').slice(0, 2).join(':'));
  } catch (e) {
    if ((e as { code?: number }).code === 1) return [];
    throw e;
  }
}

// The names are assembled so that this file does not cite them itself.
for (const doc of ['DESIGN', 'STYLE', 'toolchain'].map((name) => `${name}.md`)) {
  test(`no tracked file cites ${doc}, which is not in the repository`, async (t) => {
    t.false(existsSync(join(repoRoot, doc)), `${doc} is in the repository now: this test can go`);
    t.deepEqual(await citing(doc), []);
  });
}

test('the architecture page the code cites exists', async (t) => {
  t.true(existsSync(join(repoRoot, 'docs/architecture.md')));
  t.true((await citing('docs/architecture.md')).length > 0);
});

test('no tracked file names a path of the machine it was built on', async (t) => {
  t.deepEqual(await citing(['', 'work', ''].join('/')), []);
});
