/**
 * Loads the native mmap addon (sidecar/native, built with node-gyp). Without it there is no zero-copy
 * shared memory, so every sidecar entry point fails with one clear message naming the build command.
 */
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SidecarError } from '../errors.js';

/** `npm ci` builds the addon (the package's install script); this rebuilds it alone, from the repository root. */
export const ADDON_BUILD_COMMAND = 'npm run build:addon';

interface ShmAddon {
  map(path: string, size: number, populate: boolean): ArrayBuffer;
  /** Absent from an addon built before it was added. */
  setRcvLowat?(fd: number, bytes: number): void;
}

const addonPath = fileURLToPath(new URL('../native/build/Release/cornserve_shm.node', import.meta.url));
let addon: ShmAddon | undefined;

export function shmAddon(): ShmAddon {
  if (addon) return addon;
  try {
    addon = createRequire(import.meta.url)(addonPath) as ShmAddon;
    return addon;
  } catch (err) {
    throw new SidecarError(
      'SIDECAR_ADDON_MISSING',
      `the sidecar's mmap addon is not built (${addonPath}: ${(err as Error).message}); build it with: ${ADDON_BUILD_COMMAND}`,
    );
  }
}

/** Maps `size` bytes of the file at `path` (shared, read-write). The mapping lives as long as the ArrayBuffer. */
export function mapFile(path: string, size: number, populate = true): ArrayBuffer {
  return shmAddon().map(path, size, populate);
}

/**
 * A setter of a connected socket's receive low-water mark (SO_RCVLOWAT: the process is woken only once that many bytes
 * are queued), or undefined when the addon in place was built before it had one (`npm run build:addon` adds it): the
 * caller then reads as before. A socket without a file descriptor (closed) is left alone, and a failed setsockopt
 * (the socket closing meanwhile) is ignored: at worst the reader is woken more often than it asked.
 */
export function receiveLowWaterSetter(): ((sock: Socket, bytes: number) => void) | undefined {
  const set = shmAddon().setRcvLowat;
  if (typeof set !== 'function') return undefined;
  return (sock, bytes) => {
    const fd = (sock as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (fd === undefined || fd < 0) return;
    try { set(fd, bytes); } catch { /* see above */ }
  };
}
