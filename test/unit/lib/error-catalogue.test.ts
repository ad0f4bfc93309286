import test from 'ava';
import { isCornserveError } from '../../../functions/sdk/errors.js';
import { errorCatalogue } from '../../../lib/error-catalogue.js';
import { ERROR_CODES, ERROR_CODE_PREFIXES } from '../../../lib/error-codes.js';

const geri = errorCatalogue('GERI');

test("a catalogue's codes are its section of the table, each named by the code without the prefix", (t) => {
  const section = Object.keys(ERROR_CODES).filter((code) => code.startsWith('GERI_'));
  t.deepEqual(Object.values(geri.codes).sort(), section.sort());
  t.is(geri.codes.NO_SIDECAR, 'GERI_NO_SIDECAR');
});

test('each code of the catalogue answers with the status the table declares', (t) => {
  t.is(geri.status('GERI_NO_SIDECAR'), 503);
  t.is(geri.status('GERI_HIDDEN_SIZE_MISMATCH'), 422);
});

test("another component's code has no status in this catalogue", (t) => {
  t.is(geri.status('ERIC_NO_SIDECAR'), undefined);
  t.is(geri.status('OTHER_CODE'), undefined);
});

test('every code in the table belongs to a known component prefix', (t) => {
  const orphans = Object.keys(ERROR_CODES).filter((code) => !ERROR_CODE_PREFIXES.some((p) => code.startsWith(`${p}_`)));
  t.deepEqual(orphans, []);
});

test("the catalogue's error class carries the code, its status and the class's name, and is a CornserveError", (t) => {
  const DemoError = geri.errorClass('DemoError');
  const e = new DemoError('GERI_NO_SIDECAR', 'no sidecar', { node: 'n0' });
  t.true(e instanceof DemoError);
  t.true(isCornserveError(e));
  t.like(e, { name: 'DemoError', code: 'GERI_NO_SIDECAR', status: 503, message: 'no sidecar', details: { node: 'n0' } });
});
