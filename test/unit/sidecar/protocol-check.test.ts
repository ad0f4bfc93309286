/**
 * The hand-written checks of the hot requests (put, recv, done, cancel) and of peer chunks accept exactly what the zod
 * schemas accept: every valid request passes with its fields as zod reads them, every invalid one fails with zod's issue.
 */
import test from 'ava';
import { ClientRequest, PeerMessage, parseClientRequest, parsePeerMessage } from '../../../sidecar/wire/protocol.js';

const put = {
  op: 'put', rid: 7, id: 'req-1', chunk: 0, numChunks: 2, dst: [[1, 2], [3]], kind: 'tensor', dtype: 'f32', shape: [2, 3],
  size: 24, alloc: -3, ttlMs: 1000, deadline: 1_700_000_000_000, lease: true, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};
const recv = { op: 'recv', rid: 8, id: 'req-1', chunk: 1, deadline: 1_700_000_000_000 };
const done = { op: 'done', rid: 9, id: 'req-1', chunk: 1, group: true, quiet: true };
const cancel = { op: 'cancel', rid: 10 };
const chunk = {
  op: 'chunk', id: 'req-1', chunk: 0, numChunks: 1, dst: [[2]], kind: 'bytes', size: 5, producerRank: 0, expiresAt: 1_700_000_000_000,
};

/** Invalid (or edge) values to try in place of each field, and the field removed. */
const BAD: unknown[] = [undefined, null, '', 'x', 'x'.repeat(257), -1, 1.5, 0, 1, 2 ** 53, true, [], [[]], [[-1]], [[1.5]], [1], {}, 'f99', 'tensor', 'bytes'];

/** `base` and every variant of it with one field replaced by a value of BAD (undefined: removed). */
function variants(base: Record<string, unknown>): Array<Record<string, unknown>> {
  const out = [base];
  for (const key of Object.keys(base)) {
    for (const v of BAD) {
      const m = { ...base };
      if (v === undefined) delete m[key]; else m[key] = v;
      out.push(m);
    }
  }
  return out;
}

function agrees(t: import('ava').ExecutionContext, fast: ReturnType<typeof parseClientRequest> | ReturnType<typeof parsePeerMessage>,
  slow: ReturnType<typeof ClientRequest.safeParse> | ReturnType<typeof PeerMessage.safeParse>, what: string): void {
  t.is(fast.success, slow.success, `${what}: accepted by one check only`);
  if (fast.success && slow.success) {
    for (const [k, v] of Object.entries(slow.data)) t.deepEqual((fast.data as Record<string, unknown>)[k], v, `${what}: field ${k}`);
  } else if (!fast.success && !slow.success) {
    t.deepEqual(fast.error.issues[0]?.path, slow.error.issues[0]?.path, `${what}: the same issue`);
  }
}

test('the fast check of put, recv, done and cancel accepts exactly what the zod schema accepts', (t) => {
  let accepted = 0;
  for (const base of [put, recv, done, cancel]) {
    for (const m of variants(base)) {
      const slow = ClientRequest.safeParse(m);
      if (slow.success) accepted++;
      agrees(t, parseClientRequest(m), slow, JSON.stringify(m));
    }
  }
  t.true(accepted > 20, 'valid variants were tried too');
  for (const odd of [null, 7, 'put', [put], { ...put, op: 'hello' }]) agrees(t, parseClientRequest(odd), ClientRequest.safeParse(odd), JSON.stringify(odd));
});

test('an invalid hot request is rejected with zod\'s issue, naming the field', (t) => {
  const r = parseClientRequest({ ...recv, chunk: -1 });
  t.false(r.success);
  if (!r.success) t.deepEqual(r.error.issues[0]?.path, ['chunk']);
});

test('the fast check of a peer chunk accepts exactly what the zod schema accepts', (t) => {
  for (const m of variants(chunk)) agrees(t, parsePeerMessage(m), PeerMessage.safeParse(m), JSON.stringify(m));
  for (const other of [{ op: 'close', id: 'a', numChunks: 2 }, { op: 'fail', id: 'a', reason: 'x' }, { op: 'hello', node: 'n1' }, { op: 'close', id: 'a' }]) {
    agrees(t, parsePeerMessage(other), PeerMessage.safeParse(other), JSON.stringify(other));
  }
});
