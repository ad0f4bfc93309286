import test from 'ava';
import { isCornserveError } from '../../../functions/sdk/errors.js';
import { errorCatalogue } from '../../../lib/error-catalogue.js';

const catalogue = errorCatalogue({
  TOO_LARGE: ['DEMO_TOO_LARGE', 413],
  NO_SIDECAR: ['DEMO_NO_SIDECAR', 503],
});

test('the codes object names each stable code by its key', (t) => {
  t.deepEqual(catalogue.codes, { TOO_LARGE: 'DEMO_TOO_LARGE', NO_SIDECAR: 'DEMO_NO_SIDECAR' });
});

test('each code of the catalogue answers with the status declared beside it', (t) => {
  t.is(catalogue.status('DEMO_TOO_LARGE'), 413);
  t.is(catalogue.status('DEMO_NO_SIDECAR'), 503);
});

test('a code the catalogue does not hold has no status', (t) => {
  t.is(catalogue.status('OTHER_CODE'), undefined);
});

test("the catalogue's error class carries the code, its status and the class's name, and is a CornserveError", (t) => {
  const DemoError = catalogue.errorClass('DemoError');
  const e = new DemoError('DEMO_TOO_LARGE', 'too large', { limit: 3 });
  t.true(e instanceof DemoError);
  t.true(isCornserveError(e));
  t.like(e, { name: 'DemoError', code: 'DEMO_TOO_LARGE', status: 413, message: 'too large', details: { limit: 3 } });
});
