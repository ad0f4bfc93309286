/**
 * Every call `cornserve up --apps functions/apps` prints works as printed: each curl line and each `cornserve invoke`
 * line is run by bash exactly as a user pastes it (the CLI alias expanded as the banner defines it), against that `up`.
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchUp, type LaunchedUp } from '../../../control/compose/launch-up.js';
import { repoRoot } from '../../helpers/repo.js';

const APPS = readdirSync(join(repoRoot, 'functions/apps')).filter((f) => f.endsWith('.ts')).map((f) => f.replace(/\.ts$/, ''));
const CLI = 'node --import tsx control/cli/main.ts';

/** The printed example lines of one app, once its whole block (curl and invoke lines in pairs) has arrived. */
function examplesOf(stdout: string, app: string): string[] | undefined {
  const lines = stdout.split('\n').map((l) => l.trim());
  const curls = lines.filter((l) => l.startsWith('curl ') && l.includes(`/app/invoke/${app} `));
  const invokes = lines.filter((l) => l.startsWith(`cornserve invoke ${app} `));
  return curls.length > 0 && curls.length === invokes.length ? [...curls, ...invokes] : undefined;
}

let up: LaunchedUp | undefined;
test.after.always(async () => {
  await up?.stop();
});

test('every example call `up` prints answers without an error when run as printed', async (t) => {
  t.timeout(900_000); // every example app's executors start on a loaded 2-core machine: bounds about "eventually"
  up = await launchUp({
    args: ['--devices', '12', '--apps', 'functions/apps'],
    env: { CORNSERVE_ADMIN_TOKEN: 'up-examples-token' },
    readyWhen: { what: 'every app in functions/apps printed its examples', test: (stdout) => APPS.every((app) => examplesOf(stdout, app)) },
    readyTimeoutMs: 600_000,
  });
  const env = { ...process.env, CORNSERVE_GATEWAY_URL: up.url, CORNSERVE_ADMIN_TOKEN: 'up-examples-token' };
  for (const app of APPS) {
    for (const line of examplesOf(up.stdout(), app)!) {
      const command = line.startsWith('curl ') ? `${line} -w '\\n%{http_code}'` : line.replace(/^cornserve /, `${CLI} `);
      const run = spawnSync('bash', ['-c', command], { cwd: repoRoot, env, encoding: 'utf8', timeout: 120_000 });
      const out = run.stdout.trimEnd();
      const failed = run.status !== 0 || (line.startsWith('curl ') && !out.endsWith('\n200')) || /^\{"error":/m.test(out);
      t.false(failed, `${line}\nexit ${run.status}\n${out.slice(-600)}\n${run.stderr.slice(-600)}`);
    }
  }
});
