import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRssSampler } from '../../../../bench/client/observe.js';
import { pidListeningOn, processCpuMs, processLabel, processTree, rssBytes, treeCpuMs } from '../../../../bench/client/proc.js';

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

test('the process listening on a port is found from /proc', async (t) => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  t.is(pidListeningOn((server.address() as AddressInfo).port), process.pid);
});

test('the soak sampler reads the resident memory of a process and its children, by readable label', async (t) => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', '--model-id', 'x/y'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  await new Promise((r) => child.once('spawn', r));
  t.true(processTree(process.pid).includes(child.pid!));
  t.true(rssBytes(child.pid!)! > 1024 * 1024);
  const sampler = startRssSampler(process.pid, 60_000);
  const samples = await sampler.stop();
  const labels = Object.keys(samples.at(-1)!.rssBytes);
  t.true(labels.includes(processLabel(child.pid!)), labels.join(' | '));
  t.true(labels.includes(processLabel(process.pid)));
  t.true(Object.values(samples.at(-1)!.rssBytes).every((b) => b > 0));
});
