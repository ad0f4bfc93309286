import test from 'ava';
import { SidecarError, errorFromWire, errorToWire } from '../../../sidecar/errors.js';

test('an error keeps its code and message across the wire', (t) => {
  const back = errorFromWire(errorToWire(new SidecarError('SIDECAR_TIMEOUT', 'chunk 3 of x did not arrive')));
  t.true(back instanceof SidecarError);
  t.is(back.code, 'SIDECAR_TIMEOUT');
  t.is(back.reason, 'chunk 3 of x did not arrive');
});

test('a foreign error becomes SIDECAR_INTERNAL', (t) => {
  t.is(errorFromWire(errorToWire(new TypeError('boom'))).code, 'SIDECAR_INTERNAL');
});

test('instanceof recognises an error built by another copy of the class', (t) => {
  const foreign = Object.assign(new Error('x'), { [Symbol.for('cornserve.SidecarError')]: true });
  t.true(foreign instanceof SidecarError);
});
