import test from 'ava';
import { fromWire, reportsProducerFailure, toWire } from '../../../../lib/executor-errors.js';
import { toErrorBody } from '../../../../lib/http.js';
import { SidecarError } from '../../../../sidecar/errors.js';

/** The HTTP body an executor answers for `err` after it crossed the engine link. */
const replyBody = (err: unknown) => toErrorBody(fromWire(toWire(err))).body;

test('a sidecar producer failure crossing the engine link is answered with details.producer_failed', (t) => {
  const body = replyBody(new SidecarError('SIDECAR_PRODUCER_FAILED', 'encoder crashed'));
  t.is(body.error.code, 'SIDECAR_PRODUCER_FAILED');
  t.true(reportsProducerFailure(body));
});

test('other sidecar failures and plain errors are not reported as producer failures', (t) => {
  t.false(reportsProducerFailure(replyBody(new SidecarError('SIDECAR_TIMEOUT', 'nothing arrived'))));
  t.false(reportsProducerFailure(replyBody(new Error('SIDECAR_PRODUCER_FAILED in the text only'))));
  t.false(reportsProducerFailure('SIDECAR_PRODUCER_FAILED'));
});
