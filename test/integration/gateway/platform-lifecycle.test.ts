/**
 * Start and stop of the platform (startCornserve, the composition of `cornserve up`): a start removes the temp
 * folders left by runs whose process died (kill -9) and keeps a live run's; a stop whose drain grace passes cuts
 * the streams still running with a final SHUTTING_DOWN line instead of a broken socket.
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_DIR_PREFIXES } from '../../../control/compose/up.js';
import { ownedName, pidAlive } from '../../../lib/temp-dirs.js';
import { ndjsonLines, slowStreamAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let p: TestPlatform | undefined;
test.after.always(async () => {
  await p?.stop();
});

test.serial('a start removes the temp folders of dead runs (app sources, sockets, sidecar sockets) and keeps a live run\'s', async (t) => {
  t.timeout(180_000);
  const dead = spawnSync(process.execPath, ['-e', '0']).pid;
  t.false(pidAlive(dead));
  const live = process.ppid; // ava's main process: alive for the whole test
  const made = (pid: number) => RUN_DIR_PREFIXES.map((prefix) => {
    const dir = join(tmpdir(), `${ownedName(prefix, pid)}lifecycle-test`);
    mkdirSync(join(dir, 'app-x'), { recursive: true });
    writeFileSync(join(dir, 'app-x', 'app.ts'), 'left behind');
    return dir;
  });
  const deadDirs = made(dead);
  const liveDirs = made(live);
  t.teardown(() => [...deadDirs, ...liveDirs].forEach((d) => rmSync(d, { recursive: true, force: true })));

  p = await startPlatform({ devices: 1 });
  t.deepEqual(deadDirs.filter(existsSync), [], 'the dead run\'s folders are gone');
  t.deepEqual(liveDirs.filter(existsSync), liveDirs, 'the live run\'s folders are kept');
});

test.serial('a stop whose drain grace passes ends the streams still running with a SHUTTING_DOWN line', async (t) => {
  t.timeout(180_000);
  await p?.stop();
  p = await startPlatform({ devices: 1, drainTimeoutMs: 500 });
  await p.register(slowStreamAppSource('endless', 300));
  const stream = await p.invoke('endless', { text: 'on', chunks: 1_000 }); // 5 minutes
  t.is(stream.status, 200);
  const body = ndjsonLines(stream);
  await p.stop();
  const lines = await body;
  t.true(lines.length >= 1 && lines.length < 1_000, `${lines.length} lines`);
  t.like(lines.at(-1), { error: { code: 'SHUTTING_DOWN' } });
  t.regex((lines.at(-1) as { error: { message: string } }).error.message, /shut down before this request finished/);
});
