/**
 * One child process of the local platform: spawned with piped stdout/stderr, every line re-logged with a
 * prefix and kept in a short tail (for error messages), stopped with SIGTERM and then SIGKILL after a grace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { sleep } from '../../lib/wait.js';
import { SpawnFailedError } from './errors.js';

/** Where a child's output lines go (default: our stderr, prefixed). */
export type LogSink = (prefix: string, line: string, stream: 'stdout' | 'stderr') => void;

export const stderrSink: LogSink = (prefix, line) => {
  process.stderr.write(`[${prefix}] ${line}\n`);
};

export interface ExitInfo {
  code: number | null;
  signal: string | null;
  /** True when stop()/kill() asked for it. */
  expected: boolean;
  /** The last lines the process printed (stdout and stderr interleaved). */
  logTail: string[];
}

export interface ChildOptions {
  /** Log prefix and name in errors (executor id or app name). */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  sink: LogSink;
  /** Lines kept for the exit report. @default 40 */
  tailLines?: number;
}

/** After 'exit', how long to wait for the last buffered output lines before reporting. */
const FLUSH_MS = 250;

export class ManagedChild {
  readonly exited: Promise<ExitInfo>;
  private readonly tail: string[] = [];
  private stopRequested = false;

  private constructor(private readonly proc: ChildProcess, private readonly opts: ChildOptions) {
    const streamsDone = [proc.stdout, proc.stderr].map((s, i) => {
      if (!s) return Promise.resolve();
      const rl = createInterface({ input: s, crlfDelay: Infinity });
      rl.on('line', (line) => this.onLine(line, i === 0 ? 'stdout' : 'stderr'));
      return once(rl, 'close').then(() => undefined);
    });
    this.exited = once(proc, 'exit').then(async ([code, signal]) => {
      await Promise.race([Promise.all(streamsDone), sleep(FLUSH_MS)]);
      return { code: code as number | null, signal: signal as string | null, expected: this.stopRequested, logTail: [...this.tail] };
    });
  }

  /** Spawns the process; resolves once it exists, rejects if the OS refuses. */
  static async spawn(opts: ChildOptions): Promise<ManagedChild> {
    // Its own process group: a terminal's Ctrl-C reaches only the parent, which drains and then stops its children
    // in order (the orphan guard still ends a child whose parent died).
    const proc = spawn(opts.command, opts.args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    try {
      await Promise.race([once(proc, 'spawn'), once(proc, 'error').then(([e]) => Promise.reject(e))]);
    } catch (e) {
      throw new SpawnFailedError(opts.name, e);
    }
    return new ManagedChild(proc, opts);
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** SIGTERM, then SIGKILL once `graceMs` passes; resolves when the process is gone. */
  async stop(graceMs: number): Promise<ExitInfo> {
    this.stopRequested = true;
    if (!this.running) return this.exited;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.kill(), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL now, synchronously (usable from a process 'exit' hook). */
  kill(): void {
    this.stopRequested = true;
    if (this.running) this.proc.kill('SIGKILL');
  }

  private onLine(line: string, stream: 'stdout' | 'stderr'): void {
    this.tail.push(line);
    if (this.tail.length > (this.opts.tailLines ?? 40)) this.tail.shift();
    this.opts.sink(this.opts.name, line, stream);
  }
}
