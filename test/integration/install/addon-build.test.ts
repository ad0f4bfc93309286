import test from 'ava';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ADDON_BUILD_COMMAND } from '../../../sidecar/shm/native.js';
import { repoRoot } from '../../helpers/repo.js';

const run = promisify(execFile);
const scripts = async () =>
  (JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

test("npm ci builds the sidecar addon: the package's install script is the addon build", async (t) => {
  t.is((await scripts()).install, 'node sidecar/native/build.mjs');
});

test('the missing-addon error names a package script that exists, not a path on one machine', async (t) => {
  const name = /^npm run (\S+)$/.exec(ADDON_BUILD_COMMAND)?.[1];
  t.truthy(name, ADDON_BUILD_COMMAND);
  t.is((await scripts())[name!], 'node sidecar/native/build.mjs');
});

test('the addon build script compiles a loadable addon from a copy of the sources', async (t) => {
  // A copy, so the build never touches the addon that other tests are loading.
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-addon-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await cp(join(repoRoot, 'sidecar/native'), join(dir, 'sidecar/native'), {
    recursive: true,
    filter: (src) => src !== join(repoRoot, 'sidecar/native/build'),
  });
  await symlink(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  const env = { ...process.env };
  delete env.npm_config_node_gyp; // the project's own node-gyp must be found without npm's help
  await run(process.execPath, [join(dir, 'sidecar/native/build.mjs')], { cwd: dir, env, timeout: 170_000 });
  const addon = createRequire(import.meta.url)(join(dir, 'sidecar/native/build/Release/cornserve_shm.node')) as { map: unknown };
  t.is(typeof addon.map, 'function');
});
