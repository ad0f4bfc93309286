/**
 * Unregister while requests are in flight: the app drains (new requests 503 APP_UNREGISTERING, in-flight streams
 * run to their end within the grace, or end with a final APP_UNREGISTERING line once it passes), then goes away.
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { ndjsonLines, slowStreamAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 1, drainTimeoutMs: 120_000 });
});
test.after.always(async () => {
  await p?.stop();
});

const CHUNKS = 8;

test.serial('unregister lets in-flight streams finish, answers new requests 503 APP_UNREGISTERING, then removes the app and its function', async (t) => {
  t.timeout(240_000);
  const appId = await p.register(slowStreamAppSource('drainee', 300));
  // Four streams, each in flight once its first line is out (the reply's headers follow the first chunk).
  const streams = await Promise.all(Array.from({ length: 4 }, (_, i) => p.invoke('drainee', { text: `s${i}`, chunks: CHUNKS })));
  for (const s of streams) t.is(s.status, 200);
  const bodies = streams.map((s) => ndjsonLines(s));

  const unregistered = p.admin('/app/unregister/drainee');
  await waitUntil('the app is draining', () => p.apps.unregistering(appId), { timeoutMs: 30_000 });
  const refused = await p.invoke('drainee', { text: 'late', chunks: 1 });
  const refusal = (await refused.json()) as { error: { code: string; message: string } };
  t.is(refused.status, 503);
  t.is(refusal.error.code, 'APP_UNREGISTERING');
  t.regex(refusal.error.message, /app drainee is being unregistered/);

  for (const [i, body] of bodies.entries())
    t.deepEqual(await body, Array.from({ length: CHUNKS }, (_, index) => ({ echo: `s${i}`, index })), `stream ${i} ran to its end`);
  t.is((await unregistered).status, 200);
  t.is((await p.invoke('drainee', { text: 'gone', chunks: 1 })).status, 404);
  t.false(p.platform.processes().some((x) => x.kind === 'app-function' && x.id === appId), 'its function is stopped');
});

test.serial('unregister cuts the streams still running when its drain grace passes: they end with an APP_UNREGISTERING line', async (t) => {
  t.timeout(240_000);
  const appId = await p.register(slowStreamAppSource('cut-short', 300));
  const stream = await p.invoke('cut-short', { text: 'long', chunks: 1_000 }); // 5 minutes
  t.is(stream.status, 200);
  const body = ndjsonLines(stream);
  await p.apps.unregister('cut-short', { drainTimeoutMs: 500 });
  const lines = await body;
  t.true(lines.length >= 1 && lines.length < 1_000, `${lines.length} lines`);
  t.like(lines.at(-1), { error: { code: 'APP_UNREGISTERING' } });
  t.regex((lines.at(-1) as { error: { message: string } }).error.message, /app cut-short was unregistered before this request finished/);
  t.false(p.platform.processes().some((x) => x.kind === 'app-function' && x.id === appId));
});
