/**
 * One deadline rule (lib/deadline.ts) at every hop: the gateway, the app function, the dispatcher (CloudEvent)
 * and the executors accept and refuse exactly the same `x-cornserve-deadline` values.
 */
import test from 'ava';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { z } from 'zod';
import { DEADLINE_HEADER, LATEST_DEADLINE_MS, deadlineAfter, parseDeadline } from '../../../lib/deadline.js';
import { errorHandler } from '../../../lib/http.js';
import { logger } from '../../../lib/log.js';
import { requestDeadline } from '../../../control/gateway/deadline.js';
import { startDispatcher, type RunningDispatcher } from '../../../control/dispatcher/server.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { deadlineOf } from '../../../executors/common/deadline.js';
import { buildFunctionServer } from '../../../functions/runtime/server.js';
import { taskGraphEvent } from '../../../functions/runtime/cloudevent-dispatcher.js';
import { defineApp } from '../../../functions/sdk/index.js';

const invalid = (m: string) => new Error(m);
const rule = { where: 'the deadline', invalid, now: 1_000 };

test('absent means now + the default; a whole number of epoch ms is taken as is', (t) => {
  t.is(parseDeadline(undefined, { ...rule, defaultMs: 500 }), 1_500);
  t.is(parseDeadline('1732540000000', rule), 1_732_540_000_000);
  t.is(parseDeadline(1_732_540_000_000, rule), 1_732_540_000_000);
  t.is(parseDeadline(String(LATEST_DEADLINE_MS), rule), LATEST_DEADLINE_MS);
  t.is(parseDeadline('1', rule), 1, 'a deadline in the past is valid (the request then times out)');
});

test('fractions, signs, exponents, spaces, hex, empty text and dates past 8.64e15 are refused naming the field', (t) => {
  for (const bad of ['1.5', '1732540000000.5', '-5', '0', '+5', '1e12', ' 123', '0x10', '', 'abc', '8640000000000001', '99999999999999999', 1.5, -1, 0, NaN, Infinity, null, true]) {
    const err = t.throws(() => parseDeadline(bad, rule), undefined, `accepted ${JSON.stringify(bad)}`);
    t.regex(err!.message, /^the deadline must be a deadline in epoch milliseconds/);
  }
});

test('timeout_ms follows the same rule: a positive whole number of milliseconds', (t) => {
  t.is(deadlineAfter('250', rule), 1_250);
  for (const bad of ['1.5', '0', '-1', '', 'x', '1e3']) t.throws(() => deadlineAfter(bad, rule), undefined, `accepted ${bad}`);
});

// --- the hops, each behind a real HTTP server ------------------------------------------------------------

const servers: Server[] = [];
let dispatcher: RunningDispatcher;
test.after.always(async () => {
  servers.forEach((s) => s.close());
  await dispatcher?.close(0);
});

async function serve(handler: (req: express.Request) => number): Promise<string> {
  const app = express();
  app.post('/', (req, res) => void res.json({ deadline: handler(req) }));
  app.use(errorHandler(logger('test').child({}, { level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((r) => server.once('listening', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

const noTasks = defineApp({ name: 'no-tasks', tasks: {}, request: z.object({}), response: z.object({ ok: z.boolean() }), async serve() { return { ok: true }; } });

type Hop = (value: string) => Promise<'accepted' | 'rejected'>;
let hops: Record<string, Hop>;

test.before(async () => {
  const verdict = async (res: Response, badCode: string) => {
    const body = (await res.json()) as { error?: { code?: string } };
    return res.status === 400 && body.error?.code === badCode ? 'rejected' as const : 'accepted' as const;
  };
  const gateway = await serve((req) => requestDeadline(req));
  const executor = await serve((req) => deadlineOf(req, 300_000));
  const fn = buildFunctionServer({ app: noTasks, appId: 'app-deadline', dispatcher: { dispatch: () => Promise.reject(new Error('no tasks')) }, log: logger('test').child({}, { level: 'silent' }) });
  servers.push(fn);
  await new Promise<void>((r) => fn.listen(0, '127.0.0.1', r));
  const fnUrl = `http://127.0.0.1:${(fn.address() as AddressInfo).port}/invoke`;
  dispatcher = await startDispatcher({ store: new MemoryStore() });
  const post = (url: string, value: string, headers: Record<string, string> = {}, body = '{}') =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers, [DEADLINE_HEADER]: value }, body });
  hops = {
    gateway: async (v) => verdict(await post(gateway, v), 'BAD_REQUEST'),
    'app function': async (v) => verdict(await post(fnUrl, v, {}, '{"request_data":{}}'), 'BAD_REQUEST'),
    'dispatcher (CloudEvent)': async (v) => {
      const { headers, body } = taskGraphEvent({ invocations: [], is_streaming: false } as never, 'app-deadline', 1);
      return verdict(await post(dispatcher.url, v, { ...headers, 'ce-deadline': v }, body), 'DEADLINE_INVALID');
    },
    executor: async (v) => verdict(await post(executor, v), 'EXECUTOR_BAD_DEADLINE'),
  };
});

test('every hop accepts and refuses the same x-cornserve-deadline values', async (t) => {
  const far = String(Date.now() + 30 * 24 * 3600_000);
  const cases: Array<[string, 'accepted' | 'rejected']> = [
    [String(Date.now() + 60_000), 'accepted'], [far, 'accepted'], ['1', 'accepted'], [String(LATEST_DEADLINE_MS), 'accepted'],
    [`${Date.now() + 60_000}.5`, 'rejected'], ['1e15', 'rejected'], ['-1', 'rejected'], ['0', 'rejected'], ['', 'rejected'],
    ['0x10', 'rejected'], ['soon', 'rejected'], ['8640000000000001', 'rejected'],
  ];
  for (const [value, expected] of cases) {
    for (const [hop, check] of Object.entries(hops)) t.is(await check(value), expected, `${hop} on ${JSON.stringify(value)}`);
  }
});
