import test from 'ava';
import { appObjectName, dnsName, executorObjectName, labelValue } from '../../../../../control/platform/kubernetes/names.js';

const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

test('an id that is already a valid name keeps its readable form', (t) => {
  t.is(executorObjectName('echobasetask-3f2a9c0d41be-0'), 'cs-exec-echobasetask-3f2a9c0d41be-0');
});

test('an id with characters Kubernetes refuses gets a valid name with a hash suffix', (t) => {
  const name = executorObjectName('Encoder_Task:3/a');
  t.regex(name, DNS_1035);
  t.regex(name, /^cs-exec-encoder-task-3-a-[0-9a-f]{8}$/);
});

test('long ids that share a prefix get different names of at most 63 characters', (t) => {
  const base = 'x'.repeat(80);
  const a = executorObjectName(`${base}-a`);
  const b = executorObjectName(`${base}-b`);
  t.not(a, b);
  t.true(a.length <= 63 && b.length <= 63);
  t.regex(a, DNS_1035);
});

test('app object names leave room for the names Knative derives from them', (t) => {
  const name = appObjectName('a'.repeat(63));
  t.true(name.length <= 49);
  t.true(`${name}-00001-private`.length <= 63);
});

test('label values are at most 63 characters and alphanumeric at both ends', (t) => {
  for (const v of ['-lead', 'trail-', 'a'.repeat(100), 'has space/and:colon', 'ok.value_1']) {
    const l = labelValue(v);
    t.regex(l, /^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/, v);
  }
  t.is(labelValue('ok.value_1'), 'ok.value_1');
});

test('a name made only of refused characters is still a valid name', (t) => {
  t.regex(dnsName('cs-', '___'), DNS_1035);
});
