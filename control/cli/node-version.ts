/**
 * The Node.js version the project needs, checked before the CLI does anything else: package.json's
 * `engines.node` is the one statement of it. Some dependencies (the @opentelemetry 0.30x line) declare
 * Node >= 22.15 while running fine on 20.19+ (the whole suite runs on 20.20); an older Node fails later in
 * obscure ways, so it is refused here with one clear line. Imported first by main.ts: the check runs on import.
 */
import { readFileSync } from 'node:fs';

/** `engines.node` from package.json (">=20.19"). */
export function requiredNodeRange(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines?: { node?: string } };
  const range = pkg.engines?.node;
  if (!range) throw new Error('package.json has no engines.node');
  return range;
}

const parts = (v: string) => v.split('.').map((n) => Number.parseInt(n, 10) || 0);

/** Why `version` (process.versions.node) does not satisfy `range` (only ">=X[.Y[.Z]]" is used), or undefined when it does. */
export function nodeVersionProblem(version: string, range: string): string | undefined {
  const min = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(range.trim())?.[1];
  if (!min) throw new Error(`engines.node "${range}" is not of the form ">=X.Y"`);
  const have = parts(version);
  const need = parts(min);
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const n = need[i] ?? 0;
    if (h > n) return undefined;
    if (h < n) return `cornserve needs Node.js ${range} (package.json engines); this is Node ${version}. Install a newer Node.js and run it again.`;
  }
  return undefined;
}

const problem = nodeVersionProblem(process.versions.node, requiredNodeRange());
if (problem) {
  console.error(problem);
  process.exit(1);
}
