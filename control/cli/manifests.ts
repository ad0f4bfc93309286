/**
 * `cornserve manifests APP.ts`: the app's ConfigMap (its source) and Knative Service as YAML, for
 * `kubectl apply -f -` or `kn service create --filename`. The app's name comes from its own defineApp
 * (checked in a throwaway process, as the gateway does) unless --name is given; image, namespace,
 * autoscaling and URLs come from the same CORNSERVE_* variables the resource manager reads.
 */
import { readFile } from 'node:fs/promises';
import { checkAppSource } from '../gateway/source-check.js';
import { manifestOptionsFromEnv, renderAppManifests } from '../platform/kubernetes/index.js';
import { CliError } from '../../lib/cli-errors.js';

export async function manifestsYaml(file: string, opts: { name?: string } = {}, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
  }
  let name = opts.name;
  if (!name) {
    const check = await checkAppSource(source, file);
    if (!check.ok) throw new CliError(`${file} is not a valid app: ${check.problems.join('; ')}`);
    name = check.name;
  }
  return renderAppManifests(name, source, manifestOptionsFromEnv(env));
}
