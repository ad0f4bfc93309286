import test from 'ava';
import { hopelessRun, HOPELESS_AFTER } from '../../../../bench/client/hopeless.js';
import type { RequestRecord } from '../../../../bench/metrics/record.js';

const answer = (index: number, status: number, errorCode?: string): RequestRecord => ({
  index, kind: 'text', scheduledMs: 0, sentMs: 0, ok: status === 200, status, ...(errorCode ? { errorCode, errorMessage: `${errorCode} message` } : {}), itlMs: [], inputTokens: 1, outputTokens: 0,
});
const alike = (status: number, code: string) => Array.from({ length: HOPELESS_AFTER }, (_, i) => answer(i, status, code));

test('the first answers all refusing the request alike make a run hopeless', (t) => {
  t.deepEqual(hopelessRun(alike(422, 'INVALID_INPUT')), { status: 422, code: 'INVALID_INPUT', message: 'INVALID_INPUT message', count: HOPELESS_AFTER });
});

test('one success among the first answers keeps a run going', (t) => {
  t.is(hopelessRun([...alike(422, 'INVALID_INPUT').slice(1), answer(9, 200)]), undefined);
});

test('server errors, timeouts and rate limits never make a run hopeless', (t) => {
  for (const [status, code] of [[503, 'NO_EXECUTOR'], [408, 'TIMEOUT'], [429, 'RATE_LIMITED'], [0, 'ECONNREFUSED']] as const) t.is(hopelessRun(alike(status, code)), undefined, code);
});

test('client errors of different kinds keep a run going (the requests differ)', (t) => {
  t.is(hopelessRun([...alike(422, 'INVALID_INPUT').slice(1), answer(9, 413, 'PAYLOAD_TOO_LARGE')]), undefined);
});

test('fewer answers than the first few decide nothing', (t) => {
  t.is(hopelessRun(alike(422, 'INVALID_INPUT').slice(1)), undefined);
});
