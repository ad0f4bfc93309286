/**
 * Temp folders owned by a process: the name carries the owner's pid (`<prefix><pid>-<random>`), so a later start
 * can recognise, and remove, the folders of an owner that died without cleaning up (kill -9), the way the sidecar
 * unlinks the shared-memory segments of dead sidecars (sidecar/shm/segment.ts).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** True while a process with this pid exists (signal 0 probes without signalling; EPERM: it exists, not ours). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The name a folder of `prefix` owned by `pid` starts with. */
export const ownedName = (prefix: string, pid = process.pid) => `${prefix}${pid}-`;

/** A fresh folder `<dir>/<prefix><this pid>-<random>`. */
export function makeOwnedTempDir(prefix: string, dir = tmpdir()): Promise<string> {
  return mkdtemp(join(dir, ownedName(prefix)));
}

/** Removes the folders under `dir` named `<prefix><pid>-...` whose pid is dead; returns their names. */
export async function removeStaleTempDirs(prefixes: string[], dir = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const prefix = prefixes.find((p) => name.startsWith(p));
    if (prefix === undefined) continue;
    const m = /^(\d+)-/.exec(name.slice(prefix.length));
    if (!m || Number(m[1]) === process.pid || pidAlive(Number(m[1]))) continue;
    try {
      await rm(join(dir, name), { recursive: true, force: true });
      removed.push(name);
    } catch {
      /* not ours to remove (permissions) or raced with another cleaner */
    }
  }
  return removed;
}
