import test from 'ava';
import { redactInternal, redactJson, userAddresses } from '../../../lib/redact.js';

test('loopback URLs, host:port pairs, unix-socket URLs and socket paths are replaced', (t) => {
  const text = [
    'request to http://127.0.0.1:41234/embeddings failed',
    'connect ECONNREFUSED 127.0.0.1:41234',
    'connect ENOENT /tmp/cs-AbC123/dispatcher.sock',
    'cannot reach the dispatcher at http+unix://%2Ftmp%2Fcs-x%2Fd.sock/graph',
    'sidecar unix:/run/cornserve/sidecar-0.sock is gone',
    'ws://localhost:9000/x',
  ].join('; ');
  const out = redactInternal(text);
  t.false(/127\.0\.0\.1|localhost|\/tmp\/|\.sock|unix:/.test(out), out);
  t.regex(out, /connect ECONNREFUSED <internal address>/);
});

test('public URLs and ordinary text are kept', (t) => {
  const text = 'https://example.com/cat.png is larger than the 1000-byte input limit; image 3 of 4';
  t.is(redactInternal(text), text);
});

test('extra words (an executor id) are replaced too, inside JSON values as well', (t) => {
  t.deepEqual(redactJson({ a: ['ran on eric-tiny-0-1 at http://127.0.0.1:5/x'], n: 3 }, ['eric-tiny-0-1']), { a: ['ran on <executor> at <internal address>'], n: 3 });
});

test('the user\'s own URL and host, quoted back in a refusal, are kept as written', (t) => {
  const sent = { data: [{ id: 'a1', url: 'http://127.0.0.1:18811/metrics', receiver_sidecar_ranks: [0] }] };
  const refusal = 'item a1: http://127.0.0.1:18811/metrics: 127.0.0.1 is a loopback address; it may be fetched only when the private URL allowlist opens it';
  t.is(redactInternal(refusal, [], userAddresses(sent)), refusal);
});

test('our addresses beside the user\'s host are still redacted (its port is not the user\'s)', (t) => {
  const keep = userAddresses({ url: 'http://127.0.0.1/cat.png' });
  t.is(redactInternal('http://127.0.0.1/cat.png failed: connect ECONNREFUSED 127.0.0.1:41234', [], keep), 'http://127.0.0.1/cat.png failed: connect ECONNREFUSED <internal address>');
});

test('userAddresses walks a request nested 100,000 deep without overflowing the stack', (t) => {
  let deep: unknown = 'http://example.com/a.png';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  t.deepEqual(userAddresses(deep).sort(), ['example.com', 'example.com', 'http://example.com/a.png'].sort());
});
