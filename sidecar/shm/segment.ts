/**
 * One shared-memory segment under /dev/shm, owned by one sidecar server instance. The file name carries
 * the node, the owner's pid and a random instance id, so a restarted sidecar never reuses a segment and
 * can recognise (and unlink) the leftovers of a dead predecessor.
 */
import { closeSync, ftruncateSync, openSync, readdirSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pidAlive } from '../../lib/temp-dirs.js';
import { mapFile } from './native.js';

export const SHM_DIR = '/dev/shm';
export const SEGMENT_PREFIX = 'cornserve-sc-';

export interface Segment {
  readonly name: string; // file name under SHM_DIR
  readonly path: string;
  readonly size: number;
  readonly buffer: ArrayBuffer; // the whole mapping
  readonly bytes: Uint8Array; // a view over `buffer`
  unlink(): void; // idempotent; the mapping stays valid until collected
}

const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');

/** Creates, sizes and maps a new segment (pages are pre-faulted, so the memory is really reserved). */
export function createSegment(node: string, size: number, dir = SHM_DIR): Segment {
  const name = `${SEGMENT_PREFIX}${safe(node)}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const path = join(dir, name);
  const fd = openSync(path, 'wx', 0o600);
  try {
    ftruncateSync(fd, size);
  } finally {
    closeSync(fd);
  }
  let buffer: ArrayBuffer;
  try {
    buffer = mapFile(path, size, true);
  } catch (err) {
    unlinkSync(path);
    throw err;
  }
  let unlinked = false;
  return {
    name, path, size, buffer, bytes: new Uint8Array(buffer),
    unlink() {
      if (unlinked) return;
      unlinked = true;
      try { unlinkSync(path); } catch { /* already gone */ }
    },
  };
}

/** Maps an existing segment made by the local sidecar (client side). */
export function openSegment(path: string, size: number): { buffer: ArrayBuffer; bytes: Uint8Array } {
  const buffer = mapFile(path, size, true);
  return { buffer, bytes: new Uint8Array(buffer) };
}

/** The pid in a segment's name (`cornserve-sc-<node>-<pid>-<instance>`). */
function ownerOf(name: string): number | undefined {
  const m = /-(\d+)-[0-9a-f]{8}$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Unlinks segments whose owning process is dead (left by a crashed sidecar). Returns their names. */
export function removeStaleSegments(dir = SHM_DIR): string[] {
  return removeSegmentsWhere((owner) => !pidAlive(owner), dir);
}

/**
 * Unlinks the segments sidecar process `pid` created, dead or not (its supervisor cleaning up after it: a SIGKILLed
 * sidecar unlinks nothing). Returns their names.
 */
export function removeSegmentsOf(pid: number, dir = SHM_DIR): string[] {
  return removeSegmentsWhere((owner) => owner === pid, dir);
}

function removeSegmentsWhere(remove: (owner: number) => boolean, dir: string): string[] {
  const removed: string[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(SEGMENT_PREFIX)) continue;
    const owner = ownerOf(f);
    if (owner === undefined || !remove(owner)) continue;
    try { unlinkSync(join(dir, f)); removed.push(f); } catch { /* raced with another cleaner */ }
  }
  return removed;
}

/** Segment files currently under `dir` whose name mentions `node` (for tests and health). */
export function listSegments(node?: string, dir = SHM_DIR): string[] {
  const p = node === undefined ? SEGMENT_PREFIX : `${SEGMENT_PREFIX}${safe(node)}-`;
  return readdirSync(dir).filter((f) => f.startsWith(p));
}
