import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { crashFunctionMidRequest, echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const SLOW_APP = echoAppSource('crashy', 3000);

let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 1 });
  await p.register(SLOW_APP);
});
test.after.always(async () => {
  await p?.stop();
});

test('a crashed app function fails its in-flight request with a 502, is restarted, and serves the next request', async (t) => {
  const { appId, pid, res } = await crashFunctionMidRequest(p, 'crashy');
  t.is(res.status, 502);
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.is(body.error.code, 'APP_FUNCTION_CRASHED');
  t.regex(body.error.message, /crashed while handling this request.*restarted/);

  await waitUntil('the app function restarted', () => p.functions.state(appId) === 'ready', { timeoutMs: 60_000 });
  const after = p.platform.processes().find((x) => x.kind === 'app-function' && x.id === appId)!;
  t.not(after.pid, pid);
  const next = await p.invoke('crashy', { text: 'alive' });
  t.is(next.status, 200);
  t.deepEqual(await next.json(), { echo: 'alive' });
});
