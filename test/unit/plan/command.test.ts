/** `cornserve plan`'s command line: what it refuses before searching. */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCommand } from '../../../plan/command.js';

test('cornserve plan without --slo is refused before searching (every plan would have goodput 0) and writes no plan', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plan-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'plan.yaml');
  const cmd = planCommand({ out: () => {}, err: () => {} }).exitOverride().configureOutput({ writeErr: () => {} });
  await t.throwsAsync(cmd.parseAsync(['--apps', 'functions/apps/mllm.ts', '--devices', '4', '--out', out], { from: 'user' }),
    { message: /required option '--slo <slo>' not specified/ });
  t.false(existsSync(out));
});
