import test from 'ava';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { socketPathOf } from '../../../lib/unix-url.js';
import { ECHO_APP, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let p: TestPlatform | undefined;
test.after.always(() => p?.stop());

test('cornserve up runs the gateway -> app function hop, the store link and the dispatcher on unix sockets and removes them on stop', async (t) => {
  t.timeout(120_000);
  p = await startPlatform({ devices: 1 });
  await p.register(ECHO_APP);
  const fn = p.platform.processes().find((x) => x.kind === 'app-function')!;
  const fnSocket = socketPathOf(fn.url);
  t.truthy(fnSocket, `the app function's URL is http+unix: ${fn.url}`);
  t.true(existsSync(fnSocket!));
  const dispatcherSocket = `${dirname(fnSocket!)}/dispatcher.sock`;
  t.true(existsSync(dispatcherSocket), 'the dispatcher listens in the same run folder');
  t.true(existsSync(`${dirname(fnSocket!)}/store.sock`), 'the store link (in-process dispatch of the app functions) listens in the same run folder');
  t.regex(p.dispatcherUrl, /^http:\/\/127\.0\.0\.1:\d+$/, 'the dispatcher keeps its TCP address for callers elsewhere');
  const executor = p.platform.processes().find((x) => x.kind === 'executor')!;
  t.regex(executor.url, /^http:\/\//, 'executors stay TCP');

  const res = await p.invoke('echo', { text: 'over unix' });
  t.deepEqual(await res.json(), { echo: 'over unix' });

  await p.stop();
  t.false(existsSync(dirname(fnSocket!)), 'the run folder and its sockets are gone');
});
