/**
 * `up --function-hop http`: the gateway calls app functions with one HTTP request per invocation instead of over the
 * framed link (the default, which the other gateway tests run on). The key behaviours hold on this hop too: a JSON
 * reply, a stream, an error reply, the deadline, and a crash mid-request followed by the restart wait.
 */
import test from 'ava';
import { crashFunctionMidRequest, echoAppSource, ndjsonLines, slowStreamAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let p: TestPlatform;
test.before(async () => {
  p = await startPlatform({ devices: 2, functionHop: 'http' });
  await p.register(echoAppSource('plain'));
  await p.register(slowStreamAppSource('streamer', 0));
  await p.register(echoAppSource('crashy', 3000));
});
test.after.always(async () => {
  await p?.stop();
});

test.serial('the platform was asked for the HTTP hop', (t) => {
  t.is(p.functionHop, 'http');
});

test.serial('a JSON invocation over HTTP returns the response', async (t) => {
  const res = await p.invoke('plain', { text: 'hi' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'hi' });
});

test.serial('a streaming invocation over HTTP returns one NDJSON line per chunk', async (t) => {
  const res = await p.invoke('streamer', { text: 'yo', chunks: 3 });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'application/x-ndjson');
  t.deepEqual(await ndjsonLines(res), [0, 1, 2].map((index) => ({ echo: 'yo', index })));
});

test.serial('an invalid request over HTTP is a 422 with the zod issues', async (t) => {
  const res = await p.invoke('plain', { text: 3 });
  t.is(res.status, 422);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'INVALID_INPUT');
});

test.serial('an invocation past its deadline over HTTP is a 504', async (t) => {
  const res = await p.invoke('crashy', { text: 'late' }, { timeoutMs: 300 });
  t.is(res.status, 504);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'DEADLINE_EXCEEDED');
});

test.serial('a crash mid-request over HTTP is a 502 APP_FUNCTION_CRASHED, and the next request waits for the restart', async (t) => {
  const { appId, pid, res } = await crashFunctionMidRequest(p, 'crashy');
  t.is(res.status, 502);
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.is(body.error.code, 'APP_FUNCTION_CRASHED');
  t.regex(body.error.message, /crashed while handling this request.*restarted/);
  // Sent as soon as the crash was reported, while the function restarts: it waits for it instead of failing.
  t.not(p.functions.state(appId), 'ready');
  const next = await p.invoke('crashy', { text: 'alive' });
  t.is(next.status, 200);
  t.deepEqual(await next.json(), { echo: 'alive' });
  t.not(p.platform.processes().find((x) => x.kind === 'app-function' && x.id === appId)!.pid, pid);
});
