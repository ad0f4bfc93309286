/**
 * Where a transfer between two sidecars spends its CPU: the "between nodes" path of test/bench/sidecar.ts (producer
 * on node n0, consumer on n1, both clients in this process), with each process's CPU read from /proc around every
 * round. Prints, per round, GB/s and each process's busy share and CPU per MiB moved. A probe, not a benchmark
 * module (`make bench` runs only the files directly in test/bench): its figures say where the time goes
 * (sidecar/ARCHITECTURE.md, "Performance"), not a ratio to a baseline.
 *
 *   node --import tsx test/bench/probes/sidecar-cpu.ts [--help]
 *
 * Environment: SIZE (bytes per transfer, default 1 MiB), INFLIGHT (default 4), COUNT (transfers per round, 3000),
 * ROUNDS (3), INPLACE=1 (send allocate()d tensors: no copy into shared memory), PIN (e.g. `bench:0,sc0:1,sc1:0`:
 * pins each process to that CPU with taskset, all its threads, before the rounds).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startSidecars } from '../../helpers/sidecar.js';
import { BENCH_SLABS, sidecarThroughput } from '../sidecar.js';

if (process.argv.includes('--help')) {
  const doc = readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0]!;
  console.log(doc.replace(/^\/\*\*\n|^ \* ?/gm, ''));
  process.exit(0);
}

const MiB = 1 << 20;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SIZE = env('SIZE', MiB), INFLIGHT = env('INFLIGHT', 4), COUNT = env('COUNT', 3000), ROUNDS = env('ROUNDS', 3);
const IN_PLACE = process.env.INPLACE === '1';
const TICKS_PER_S = 100; // USER_HZ: /proc/<pid>/stat counts CPU in these

/** User and system CPU of a process so far, in clock ticks (/proc/<pid>/stat fields 14 and 15). */
function cpuTicks(pid: number): { user: number; sys: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]), sys: Number(fields[12]) };
}

const cluster = await startSidecars({ nodes: [[0, 1], [2]], slabs: BENCH_SLABS });
try {
  const prod = await cluster.client(0);
  const cons = await cluster.client(2);
  // The bench's own transfer loop (rotating sources over 96 MiB, or allocate()d tensors): the same work it measures.
  const transfer = (count: number, tag: string) => sidecarThroughput(prod, cons, SIZE, count, INFLIGHT, tag, IN_PLACE);

  await transfer(COUNT, 'warm'); // JIT warm-up of the clients and both sidecars
  const procs = { bench: process.pid, sc0: cluster.nodes[0]!.pid()!, sc1: cluster.nodes[1]!.pid()! };
  for (const pin of (process.env.PIN ?? '').split(',').filter(Boolean)) {
    const [name, cpu] = pin.split(':') as [keyof typeof procs, string];
    const r = spawnSync('taskset', ['-a', '-p', `0x${(1 << Number(cpu)).toString(16)}`, String(procs[name])], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`cannot pin ${name} to CPU ${cpu}: ${r.error?.message ?? r.stderr}`);
  }
  console.log(`${COUNT} × ${SIZE} B per round, ${INFLIGHT} in flight, ${IN_PLACE ? 'produced in place' : 'copied into shared memory'}${process.env.PIN ? `, pinned ${process.env.PIN}` : ''}`);
  for (let r = 0; r < ROUNDS; r++) {
    const before = Object.values(procs).map(cpuTicks);
    const t0 = process.hrtime.bigint();
    const gbps = await transfer(COUNT, `r${r}`);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const mib = COUNT * SIZE / MiB;
    const parts = Object.keys(procs).map((name, i) => {
      const a = cpuTicks(Object.values(procs)[i]!), b = before[i]!;
      const user = (a.user - b.user) / TICKS_PER_S, sys = (a.sys - b.sys) / TICKS_PER_S;
      return `${name} ${(100 * (user + sys) / seconds).toFixed(0)}% (${(1e3 * (user + sys) / mib).toFixed(3)} ms/MiB, sys ${(1e3 * sys / mib).toFixed(3)})`;
    });
    console.log(`round ${r}: ${gbps.toFixed(2)} GB/s  ${parts.join('  ')}`);
  }
} finally {
  await cluster.stop();
}
