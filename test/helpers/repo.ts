import { fileURLToPath } from 'node:url';

/** The repository root (launch entries are relative to it). */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** True while a process with this pid exists. */
export { pidAlive as isAlive } from '../../lib/temp-dirs.js';
