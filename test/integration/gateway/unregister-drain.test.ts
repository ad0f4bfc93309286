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

/** A chat-shaped streaming app: `max_tokens` chunks, each after a 300 ms echo call (no model needed). */
const SLOW_CHAT_APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: 300 });
const chunk = z.object({ object: z.string(), choices: z.array(z.object({ index: z.number(), delta: z.object({ content: z.string() }), finish_reason: z.null() })) });
export default defineApp({
  name: 'slow-chat', tasks: { echo },
  request: z.object({ model: z.string(), max_tokens: z.number().int().positive() }).passthrough(),
  response: chunk,
  async *serve(req) {
    for (let i = 0; i < req.max_tokens; i++) {
      const { echo: content } = await echo.call({ text: 'tok ' });
      yield { object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] };
    }
  },
});`;

test.serial('an OpenAI chat stream still running when the unregister grace passes ends with an app_unregistering error event', async (t) => {
  t.timeout(240_000);
  await p.register(SLOW_CHAT_APP);
  const res = await fetch(new URL('/v1/chat/completions', p.gatewayUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'slow-chat', stream: true, max_tokens: 1_000, messages: [{ role: 'user', content: 'go on' }] }),
  });
  t.is(res.status, 200);
  const text = res.text();
  await p.apps.unregister('slow-chat', { drainTimeoutMs: 500 });
  const events = (await text).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  t.true(events.length >= 2 && events.length < 1_000, `${events.length} events`);
  t.not(events.at(-1), '[DONE]');
  const last = JSON.parse(events.at(-1)!) as { error: { code: string; message: string } };
  t.is(last.error.code, 'app_unregistering');
  t.regex(last.error.message, /app slow-chat was unregistered before this request finished/);
});
