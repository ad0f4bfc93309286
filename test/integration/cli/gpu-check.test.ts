/** `make gpu-check`'s script on a machine without NVIDIA GPUs: it says so and exits 0, starting nothing. */
import test from 'ava';
import { execFile } from 'node:child_process';
import { repoRoot } from '../../helpers/repo.js';

test('without nvidia-smi the GPU check says it found no GPU and exits 0 without starting the platform', async (t) => {
  const r = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'test/gpu/check.ts'], { cwd: repoRoot, env: { ...process.env, PATH: '/usr/bin:/bin' }, timeout: 120_000 }, (err, stdout) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout });
    });
  });
  t.is(r.code, 0);
  t.is(r.stdout, 'gpu-check: no NVIDIA GPU found (nvidia-smi not found); nothing to check\n');
});
