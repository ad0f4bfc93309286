import test from 'ava';
import { CPU_FALLBACK_DEVICES, NVIDIA_SMI_ARGS, devicesOption, discoverDevices, parseNvidiaSmi } from '../../../../control/platform/gpus.js';

// Captured from `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader` on a 4-GPU host.
const FOUR_GPUS = `0, NVIDIA A100-SXM4-80GB, 81920 MiB
1, NVIDIA A100-SXM4-80GB, 81920 MiB
2, NVIDIA A100-SXM4-80GB, 81920 MiB
3, NVIDIA A100-SXM4-80GB, 81920 MiB
`;

test('parseNvidiaSmi reads index, name and memory of every GPU line', (t) => {
  const gpus = parseNvidiaSmi(FOUR_GPUS);
  t.is(gpus.length, 4);
  t.deepEqual(gpus[3], { index: 3, name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 });
});

test('parseNvidiaSmi orders GPUs by index and skips blank lines', (t) => {
  t.deepEqual(parseNvidiaSmi('\n1, Tesla T4, 15360 MiB\n\n0, NVIDIA GeForce RTX 4090, 24564 MiB\n').map((g) => g.index), [0, 1]);
});

test('parseNvidiaSmi rejects a line that is not index, name, memory', (t) => {
  const err = t.throws(() => parseNvidiaSmi('0, Tesla T4, [N/A]\n'));
  t.regex(err.message, /line 1 .*Tesla T4/);
});

test('--devices auto uses the GPUs nvidia-smi lists, as cuda devices', async (t) => {
  const calls: string[][] = [];
  const d = await devicesOption('auto', { run: async (file, args) => (calls.push([file, ...args]), FOUR_GPUS) });
  t.like(d, { kind: 'cuda', count: 4 });
  t.deepEqual(calls, [['nvidia-smi', ...NVIDIA_SMI_ARGS]]);
});

test('--devices auto without nvidia-smi falls back to virtual CPU devices and says why', async (t) => {
  // A real spawn of a binary that does not exist (ENOENT), as on this machine.
  const d = await discoverDevices({ nvidiaSmi: '/nonexistent/nvidia-smi' });
  t.like(d, { kind: 'cpu', count: CPU_FALLBACK_DEVICES, gpus: [] });
  t.regex(d.reason, /nvidia-smi not found/);
});

test('--devices auto with nvidia-smi listing no GPU falls back to CPU devices', async (t) => {
  t.like(await devicesOption('auto', { run: async () => '' }), { kind: 'cpu', count: CPU_FALLBACK_DEVICES });
});

test('--devices N keeps N virtual CPU devices, and a bad value names the option', async (t) => {
  t.like(await devicesOption('3'), { kind: 'cpu', count: 3 });
  await t.throwsAsync(devicesOption('lots'), { message: /--devices .*'lots'/ });
});
