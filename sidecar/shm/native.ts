/**
 * Loads the native mmap addon (sidecar/native, built with node-gyp). Without it there is no zero-copy
 * shared memory, so every sidecar entry point fails with one clear message naming the build command.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SidecarError } from '../errors.js';

/** `npm ci` builds the addon (the package's install script); this rebuilds it alone, from the repository root. */
export const ADDON_BUILD_COMMAND = 'npm run build:addon';

interface ShmAddon {
  map(path: string, size: number, populate: boolean): ArrayBuffer;
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
