/**
 * `cornserve doctor`, run for real as a child process on this machine (no GPU, no CUDA libraries, no Vulkan GPU):
 * its JSON report, its numbered problems, and its exit code.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../../helpers/roles.js';
import { repoRoot } from '../../helpers/repo.js';

interface Run { code: number; stdout: string; stderr: string }

function doctor(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, 'doctor', ...args], { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 150_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

function tempDir(t: { teardown: (f: () => void) => void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('on this CPU machine with the built models, doctor reports what it found and exits 0', async (t) => {
  const r = await doctor(['--json', '--no-probe']);
  t.is(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  t.deepEqual(report.problems, []);
  t.is(report.node.version, process.versions.node);
  t.is(report.onnxruntime.version, '1.30.0');
  t.like(report.onnxruntime.providers[0], { provider: 'cuda', installed: false, missing: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'] });
  t.deepEqual(report.gpus.found, []);
  t.regex(report.gpus.reason, /nvidia-smi not found/);
  t.truthy(report.redis.version);
  t.true(report.sidecarAddon.ok);
  t.true(report.models.some((m: { folders: { name: string }[] }) => m.folders.some((f) => f.name === 'tiny-qwen2')));
});

test('an empty models folder is a numbered problem with its fix, and doctor exits 1', async (t) => {
  const empty = tempDir(t, 'cs-doctor-models-');
  const r = await doctor(['--no-probe', '--models', empty]);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`1\\. model folder ${empty} holds no model`));
  t.regex(r.stdout, /fix: put exported models there, or build the project's own with make models/);
});

test('without redis-server on PATH, doctor names it with the install command and exits 1', async (t) => {
  const bin = tempDir(t, 'cs-doctor-path-');
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync('/usr/bin/npm', join(bin, 'npm'));
  const r = await doctor(['--json', '--no-probe'], { PATH: `${bin}:/usr/sbin:/sbin` });
  t.is(r.code, 1);
  const { problems } = JSON.parse(r.stdout) as { problems: { problem: string; fix: string }[] };
  t.is(problems.length, 1);
  t.regex(problems[0]!.problem, /redis-server: not found on PATH/);
  t.regex(problems[0]!.fix, /apt-get install redis-server/);
});

test('with WebGPU chosen and no Vulkan GPU here, the failed probe is a problem with a Vulkan fix', async (t) => {
  const r = await doctor(['--json'], { CORNSERVE_EXECUTION_PROVIDER: 'webgpu' });
  t.is(r.code, 1);
  const report = JSON.parse(r.stdout) as { probes: { provider: string; ok: boolean; missing?: string }[]; problems: { problem: string; fix: string }[] };
  t.like(report.probes.find((p) => p.provider === 'cuda'), { ok: false, missing: 'libonnxruntime_providers_shared.so' });
  t.like(report.probes.find((p) => p.provider === 'webgpu'), { ok: false });
  t.is(report.problems.length, 1);
  t.regex(report.problems[0]!.problem, /the webgpu probe session failed on device 0.*Failed to get a WebGPU adapter/);
  t.regex(report.problems[0]!.fix, /Vulkan/);
});
