/**
 * Loading an app's TypeScript source: transpile with esbuild (no bundling: every import stays an
 * import), rewrite the imports so they resolve to this repository, write the result as a .mjs file
 * next to the source, import it, and check it with appFromModule.
 *
 * Import rules (see docs/control-plane.md, "Writing an app"):
 *  - `cornserve/sdk`, `cornserve/tasks`, `cornserve/tasks/<file>` (also `cornserve/functions/...`), and
 *    relative paths ending in `sdk`, `sdk/<file>`, `tasks` or `tasks/<file>` (what apps inside
 *    functions/apps/ write) map to this repository's functions/sdk and functions/tasks modules — the very
 *    module instances the runtime uses, so `instanceof Task` and the task registry work;
 *  - `node:` built-ins stay as they are; other bare packages (zod, ...) resolve from this repository;
 *  - any other relative import is an error: an app is one file.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Message, type Plugin } from 'esbuild';
import { appFromModule, isCornserveError, type App } from '../sdk/index.js';
import { AppSourceError } from './errors.js';

const FUNCTIONS_DIR = fileURLToPath(new URL('..', import.meta.url));
const LIBRARIES = new Set(['sdk', 'tasks']);
const ALIAS = /^cornserve\/(?:functions\/)?(sdk|tasks)(?:\/([\w-]+)(?:\.[jt]s)?)?$/;
const RELATIVE = /^\.{1,2}\/(?:.*\/)?(sdk|tasks)(?:\/([\w-]+)(?:\.[jt]s)?)?$/;
const BUILTINS = new Set(builtinModules);
/** `cornserve/registry/<name>`: a unit task registered at run time (control/registry writes its module). */
const REGISTRY_IMPORT = /^cornserve\/registry\/([a-z][a-z0-9-]*)$/;
/** The folder of the registered tasks' modules, set by the gateway for the check process and the app functions. */
export const REGISTRY_DIR_ENV = 'CORNSERVE_REGISTRY_DIR';

function registeredTaskModule(name: string, spec: string): { url: string } | { problem: string } {
  const dir = process.env[REGISTRY_DIR_ENV];
  const file = dir ? join(dir, `${name}.mjs`) : undefined;
  if (!file || !existsSync(file)) return { problem: `import "${spec}": no unit task named ${name} is registered (cornserve tasks register FILE.ts)` };
  return { url: pathToFileURL(file).href };
}

/** The absolute file URL an app's import specifier maps to, or a problem sentence. */
export function mapImport(spec: string): { url: string } | { problem: string } {
  const registered = REGISTRY_IMPORT.exec(spec);
  if (registered) return registeredTaskModule(registered[1]!, spec);
  const lib = ALIAS.exec(spec) ?? RELATIVE.exec(spec);
  if (lib && LIBRARIES.has(lib[1]!)) {
    const file = join(FUNCTIONS_DIR, lib[1]!, `${lib[2] ?? 'index'}.ts`);
    if (!existsSync(file)) return { problem: `import "${spec}": there is no module functions/${lib[1]}/${lib[2]}` };
    return { url: pathToFileURL(file).href };
  }
  if (spec.startsWith('node:') || BUILTINS.has(spec)) return { url: spec.startsWith('node:') ? spec : `node:${spec}` };
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('file:'))
    return { problem: `import "${spec}": an app is a single file; it may import cornserve/sdk, cornserve/tasks and installed packages only` };
  try {
    return { url: import.meta.resolve(spec) };
  } catch {
    return { problem: `import "${spec}": package not installed on the platform` };
  }
}

const importMapper: Plugin = {
  name: 'cornserve-imports',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const mapped = mapImport(args.path);
      if ('problem' in mapped) return { errors: [{ text: mapped.problem }] };
      return { path: mapped.url, external: true };
    });
  },
};

const describeMessage = (m: Message, file: string) =>
  m.location ? `${basename(file)}:${m.location.line}:${m.location.column + 1}: ${m.text}` : m.text;

/** TypeScript source -> ESM JavaScript with imports rewritten. Throws AppSourceError naming every problem. */
export async function transpileApp(source: string, fileName = 'app.ts'): Promise<string> {
  try {
    const out = await build({
      stdin: { contents: source, loader: 'ts', sourcefile: basename(fileName), resolveDir: dirname(resolvePath(fileName)) },
      bundle: true, // only so that every import goes through the mapper; all of them stay external
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      keepNames: true,
      logLevel: 'silent',
      plugins: [importMapper],
    });
    return out.outputFiles[0]!.text;
  } catch (e) {
    const errors = (e as { errors?: Message[] }).errors;
    if (!errors?.length) throw e;
    throw new AppSourceError(
      errors.map((m) => (m.pluginName ? describeMessage(m, fileName) : `syntax error at ${describeMessage(m, fileName)}`)),
    );
  }
}

/** Loads in this process so far: two loads of one source at once (the simulator's tests) each get their own file. */
let loads = 0;

/** Writes the transpiled module next to the source (or into a temp dir when that folder is read-only). */
async function writeModule(sourcePath: string, js: string): Promise<string> {
  const name = `${basename(sourcePath, extname(sourcePath))}.${process.pid}.${++loads}.cornserve.mjs`;
  const candidates = [dirname(sourcePath), join(tmpdir(), 'cornserve-apps')];
  let lastError: unknown;
  for (const dir of candidates) {
    try {
      await mkdir(dir, { recursive: true });
      const file = join(dir, name);
      await writeFile(file, js);
      return file;
    } catch (e) {
      lastError = e;
    }
  }
  throw lastError;
}

/**
 * Transpiles, imports and checks an app source. Throws AppSourceError naming every problem.
 * The .mjs file is removed once imported (Node keeps the loaded module).
 */
export async function loadAppSource(source: string, sourcePath: string): Promise<App> {
  const mod = await importSource(source, sourcePath);
  try {
    return appFromModule(mod);
  } catch (e) {
    const problems = (e as { problems?: string[] }).problems;
    throw new AppSourceError(problems ?? [String(e)]);
  }
}

/** Transpiles and imports a source (an app, or a registry file); returns the module. Throws AppSourceError. */
export async function importSource(source: string, sourcePath: string): Promise<unknown> {
  const js = await transpileApp(source, sourcePath);
  const modulePath = await writeModule(sourcePath, js);
  let mod: unknown;
  try {
    mod = await import(pathToFileURL(modulePath).href);
  } catch (e) {
    if (isCornserveError(e) && e.code === 'APP_INVALID') throw new AppSourceError((e as unknown as { problems: string[] }).problems);
    const what = isCornserveError(e) ? e.message : e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    throw new AppSourceError([`the module threw while loading: ${what}`]);
  } finally {
    await rm(modulePath, { force: true });
  }
  return mod;
}
