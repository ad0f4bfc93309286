import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { processCpuMs, treeCpuMs } from '../../../../bench/client/proc.js';

test('a process that burns CPU shows it in processCpuMs', async (t) => {
  // A child that spins until killed: its CPU time grows while we watch (bounded by the test timeout).
  const child = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  await once(child, 'spawn');
  let cpu = 0;
  for (let i = 0; i < 600 && cpu < 50; i++) {
    await new Promise((r) => setTimeout(r, 50));
    cpu = processCpuMs(child.pid!);
  }
  t.true(cpu >= 50, `child CPU ${cpu} ms`);
  t.true(treeCpuMs(child.pid!) >= cpu, 'the tree reader agrees with the one-process reader');
});

test('a process that is gone reads as 0 CPU ms', async (t) => {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await once(child, 'exit');
  t.is(processCpuMs(child.pid!), 0);
});
