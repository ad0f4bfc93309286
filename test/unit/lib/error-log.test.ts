import test from 'ava';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { CornserveError } from '../../../functions/sdk/index.js';
import { logErrorReply } from '../../../lib/http.js';

/** A real pino logger whose lines are kept, parsed. */
function capturing() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(...chunk.toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)); done(); } });
  return { log: pino({ level: 'info' }, sink), lines };
}

test('an expected answer (503 NO_EXECUTOR) is logged once as a warning, without a stack', (t) => {
  const { log, lines } = capturing();
  const err = new CornserveError('NO_EXECUTOR', 'no executor of llm is ready; retry later', 503);
  logErrorReply(log, '/v1/chat/completions', 503, 'NO_EXECUTOR', err.message, err);
  t.is(lines.length, 1);
  t.is(lines[0]!.level, 40);
  t.is(lines[0]!.code, 'NO_EXECUTOR');
  t.false(JSON.stringify(lines[0]).includes('stack'));
});

test('a fault (500) is logged as an error with its stack', (t) => {
  const { log, lines } = capturing();
  const err = new Error('cannot read properties of undefined');
  logErrorReply(log, '/v1/chat/completions', 500, 'INTERNAL', err.message, err);
  t.is(lines.length, 1);
  t.is(lines[0]!.level, 50);
  t.true(JSON.stringify(lines[0]).includes('stack'));
});
