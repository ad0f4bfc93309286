import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeOwnedTempDir, ownedName, pidAlive, removeStaleTempDirs } from '../../../lib/temp-dirs.js';

/** The pid of a process that has exited (spawnSync waits for it). */
const deadPid = () => {
  const pid = spawnSync(process.execPath, ['-e', '0']).pid;
  if (pidAlive(pid)) throw new Error(`pid ${pid} was reused already`);
  return pid;
};

test('folders of a dead owner are removed, a live owner\'s and other names are kept', async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'cs-tempdirs-test-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const dead = deadPid();
  const deadDir = join(base, `${ownedName('cs-up-', dead)}abc`);
  mkdirSync(deadDir);
  writeFileSync(join(deadDir, 'fn-1.sock'), '');
  const live = await makeOwnedTempDir('cs-up-', base);
  const other = join(base, `cs-upx-${dead}-abc`); // another prefix
  mkdirSync(other);
  t.deepEqual(await removeStaleTempDirs(['cs-up-'], base), [`${ownedName('cs-up-', dead)}abc`]);
  t.false(existsSync(deadDir));
  t.true(existsSync(live));
  t.true(existsSync(other));
});
