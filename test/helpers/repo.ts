import { fileURLToPath } from 'node:url';

/** The repository root (launch entries are relative to it). */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** True while a process with this pid exists (signal 0 probes without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
