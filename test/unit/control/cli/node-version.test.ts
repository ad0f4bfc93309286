import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { nodeVersionProblem, requiredNodeRange } from '../../../../control/cli/node-version.js';
import { repoRoot } from '../../../helpers/repo.js';

const run = promisify(execFile);

test('the required Node range comes from package.json engines', (t) => {
  t.regex(requiredNodeRange(), /^>=\d+\.\d+/);
});

test('a Node at or above the required version passes', (t) => {
  t.is(nodeVersionProblem('20.19.0', '>=20.19'), undefined);
  t.is(nodeVersionProblem('20.20.2', '>=20.19'), undefined);
  t.is(nodeVersionProblem('22.1.0', '>=20.19'), undefined);
});

test('a Node below the required version is named with the required range', (t) => {
  const problem = nodeVersionProblem('20.18.3', '>=20.19');
  t.truthy(problem);
  t.true(problem!.includes('>=20.19') && problem!.includes('20.18.3'));
  t.truthy(nodeVersionProblem('18.20.4', '>=20.19'));
});

test('a range the check cannot read is an error, not a silent pass', (t) => {
  t.throws(() => nodeVersionProblem('20.20.2', '^20.19 || >=22'), { message: /not of the form/ });
});

test('the CLI refuses a too-old Node with one clear line and exit code 1', async (t) => {
  // Pretends to be Node 18 before the CLI loads: the check must run before any command does.
  const pretend = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"18.20.4"})';
  const err = await t.throwsAsync(
    run(process.execPath, ['--import', 'tsx', '--import', pretend, 'control/cli/main.ts', 'list'], { cwd: repoRoot, timeout: 60_000 }),
  );
  const failed = err as unknown as { code: number; stderr: string };
  t.is(failed.code, 1);
  t.regex(failed.stderr, /cornserve needs Node\.js >=\d+\.\d+ .*this is Node 18\.20\.4/);
});
