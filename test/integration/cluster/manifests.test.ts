import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { renderAppManifests } from '../../../control/platform/kubernetes/index.js';
import { validateManifest } from '../../helpers/kube-models.js';
import { ECHO_APP } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';
import { CLI } from '../../helpers/roles.js';

function manifests(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, 'manifests', ...args], { cwd: repoRoot, env: { PATH: process.env.PATH, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

test('`cornserve manifests functions/apps/echo.ts` prints exactly renderAppManifests for the app, and every document validates', async (t) => {
  const { code, stdout, stderr } = await manifests(['functions/apps/echo.ts']);
  t.is(code, 0, stderr);
  t.is(stdout, renderAppManifests('echo', await readFile(ECHO_APP, 'utf8')));
  const docs = parseAllDocuments(stdout).map((d) => d.toJS() as { kind: string });
  t.deepEqual(docs.map((d) => d.kind), ['ConfigMap', 'Service']);
  for (const doc of docs) t.notThrows(() => validateManifest(doc));
});

test('`cornserve manifests` takes namespace and autoscaling from the CORNSERVE_* environment', async (t) => {
  const env = { CORNSERVE_NAMESPACE: 'team-a', CORNSERVE_APP_MAX_SCALE: '7' };
  const { code, stdout, stderr } = await manifests(['functions/apps/echo.ts', '--name', 'echo2'], env);
  t.is(code, 0, stderr);
  t.is(stdout, renderAppManifests('echo2', await readFile(ECHO_APP, 'utf8'), { namespace: 'team-a', autoscaling: { maxScale: 7 } }));
});

test('`cornserve manifests` of a file that is not an app fails naming the problem', async (t) => {
  const { code, stderr } = await manifests(['package.json']);
  t.is(code, 1);
  t.regex(stderr, /not a valid app/);
});
