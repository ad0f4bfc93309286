#!/usr/bin/env node
// Builds the sidecar's shared-memory addon (cornserve_shm.node) with node-gyp. It is the root package's npm
// "install" script, so `npm ci` alone leaves a working install; `make deps` and `npm run build:addon` run it too.
// Plain JavaScript: it runs before anything (tsx included) can be assumed to work.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** node-gyp: the project's own (a devDependency), else the one npm hands to lifecycle scripts (`--omit=dev`). */
function nodeGypScript() {
  try {
    return createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
  } catch {
    const fromNpm = process.env.npm_config_node_gyp;
    if (fromNpm && existsSync(fromNpm)) return fromNpm;
    console.error('cornserve: node-gyp not found; run `npm ci` (it installs node-gyp), or `npm run build:addon`');
    process.exit(1);
  }
}

/**
 * Node's own headers when this Node install ships them (Debian's nodejs: /usr/include/node; official
 * tarballs and nvm: <prefix>/include/node), so node-gyp need not download them (no internet on CI).
 * An explicit --nodedir (npm_config_nodedir) wins.
 */
function nodedirArgs() {
  if (process.env.npm_config_nodedir) return [];
  const prefix = resolve(dirname(process.execPath), '..');
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
}

/**
 * An addon newer than its sources is kept (`--force` rebuilds): npm runs this install script again whenever the
 * package is linked (e.g. `npx cornserve` in a fresh clone), and a rebuild deletes build/ first, so processes
 * starting meanwhile would find no addon.
 */
function upToDate() {
  const addon = join(here, 'build', 'Release', 'cornserve_shm.node');
  if (process.argv.includes('--force') || !existsSync(addon)) return false;
  const built = statSync(addon).mtimeMs;
  return ['shm.c', 'binding.gyp', 'build.mjs'].every((f) => statSync(join(here, f)).mtimeMs <= built);
}

if (upToDate()) {
  console.log("cornserve: the sidecar's shared-memory addon is up to date (--force rebuilds it)");
  process.exit(0);
}

const args = [nodeGypScript(), 'rebuild', ...nodedirArgs(), `--directory=${here}`];
console.log(`cornserve: building the sidecar's shared-memory addon: node ${args.join(' ')}`);
const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
if (run.status !== 0) {
  console.error(
    'cornserve: building sidecar/native failed; it needs python3, make and a C compiler ' +
      '(Debian: apt-get install python3 make g++). Then run: npm run build:addon',
  );
  process.exit(run.status ?? 1);
}
