/** Where the repository and the app-function runtime are (local platform: entries run from the repo root). */
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Relative to REPO_ROOT, as LaunchSpec entries are. */
export const RUNTIME_ENTRY = 'functions/runtime/main.ts';
