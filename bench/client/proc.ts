/**
 * Linux /proc readers for the soak run and the benchmarks: the process listening on a TCP port (the gateway
 * of a local `cornserve up`), a process and its descendants, their resident memory, CPU time and command lines.
 * Every read tolerates a process that exits meanwhile.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

interface Stat { pid: number; ppid: number; cpuMs: number }

/** /proc/<pid>/stat of a process (all its threads, live and ended); throws when it is gone. */
function readStat(pid: number | string): Stat {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // the command name may hold spaces and ')'
  return { pid: Number(pid), ppid: Number(f[1]), cpuMs: (Number(f[11]) + Number(f[12])) * 10 }; // utime + stime, 10 ms ticks
}

function readStats(): Stat[] {
  const out: Stat[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      out.push(readStat(d));
    } catch {
      /* exited */
    }
  }
  return out;
}

/** CPU ms (user + system, every thread) used so far by one process; 0 once it is gone, or off Linux. */
export function processCpuMs(pid: number): number {
  try {
    return readStat(pid).cpuMs;
  } catch {
    return 0;
  }
}

/** `root` and every descendant still running. */
export function processTree(root: number): number[] {
  const stats = readStats();
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) if (!tree.has(s.pid) && tree.has(s.ppid)) (tree.add(s.pid), (grew = true));
  }
  return stats.filter((s) => tree.has(s.pid)).map((s) => s.pid);
}

/** CPU ms used so far by a process and all its descendants. */
export function treeCpuMs(root: number): number {
  const pids = new Set(processTree(root));
  return readStats().filter((s) => pids.has(s.pid)).reduce((n, s) => n + s.cpuMs, 0);
}

/** Resident memory in bytes (VmRSS), or undefined when the process is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A short readable name: the script (minus node and loader flags) and its distinguishing arguments (an
 * engine's executor id from its --config JSON), or the binary's name for a non-node process (tsx's esbuild).
 */
export function processLabel(pid: number): string {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return `pid ${pid}`;
  }
  if (!/(^|\/)node$/.test(argv[0] ?? '')) return `${(argv[0] ?? '?').split('/').pop()} [${pid}]`;
  const skip = new Set(['--import', '--require', '-r']);
  const rest: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    if (skip.has(argv[i]!)) { i++; continue; }
    if (rest.length === 0 && argv[i]!.startsWith('-')) continue;
    rest.push(argv[i]!);
  }
  const script = (rest[0] ?? argv[0] ?? '?').replace(/^.*?\/(control|executors|functions|sidecar)\//, '$1/');
  const keep: string[] = [];
  for (let i = 1; i < rest.length; i++) {
    const prev = rest[i - 1];
    if (/^--(modality|model-id|node)$/.test(prev ?? '') || /^(up)$/.test(rest[i]!)) keep.push(rest[i]!);
    if (prev === '--config') {
      try {
        const id = (JSON.parse(rest[i]!) as { executorId?: unknown }).executorId;
        if (typeof id === 'string') keep.push(id);
      } catch {
        /* not JSON */
      }
    }
  }
  return `${script}${keep.length ? ` ${keep.join(' ')}` : ''} [${pid}]`;
}

/** The pid listening on `port` (IPv4 or IPv6), from /proc/net/tcp* and the fds of our processes. */
export function pidListeningOn(port: number): number | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(`:${hex}`) && f[3] === '0A') inodes.add(f[9]!); // local address, state LISTEN, inode
    }
  }
  if (inodes.size === 0) return undefined;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return Number(pid);
      }
    } catch {
      /* gone or not ours */
    }
  }
  return undefined;
}
