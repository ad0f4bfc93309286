import test from 'ava';
import { z } from 'zod';
import { Stream, StreamError, ValidationError, mergeStreams, ndjsonLines, streamFrom } from '../../../../functions/sdk/index.js';

const chunk = z.object({ n: z.number().int() });
type Chunk = z.infer<typeof chunk>;

async function* lines(...items: string[]): AsyncGenerator<string> {
  for (const x of items) yield x;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const numbers = (...ns: number[]) => new Stream(chunk, lines(...ns.map((n) => JSON.stringify({ n }))));

// ---------- parsing ----------

test('a stream yields each NDJSON line parsed into a typed chunk', async (t) => {
  t.deepEqual(await collect(numbers(1, 2, 3)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
});

test('blank and whitespace-only lines are skipped', async (t) => {
  t.deepEqual(await collect(new Stream(chunk, lines('', '{"n":1}', '   ', '\t{"n":2}  ', ''))), [{ n: 1 }, { n: 2 }]);
});

test('a chunk that does not match the schema is a ValidationError naming the field', async (t) => {
  const err = await t.throwsAsync(collect(new Stream(chunk, lines('{"n":1}', '{"n":"two"}'))), { instanceOf: ValidationError });
  t.regex(err!.message, /stream chunk: n: /);
});

test('a line that is not JSON is a ValidationError quoting the line', async (t) => {
  await t.throwsAsync(collect(new Stream(chunk, lines('{"n":1', '{"n":2}'))), { instanceOf: ValidationError, message: /not JSON: \{"n":1/ });
});

test('a stream can be iterated only once', async (t) => {
  const s = numbers(1);
  await collect(s);
  await t.throwsAsync(collect(s), { instanceOf: StreamError, message: /only once/ });
});

test('a record-time placeholder has no data to iterate', async (t) => {
  await t.throwsAsync(collect(Stream.placeholder(chunk)), { instanceOf: StreamError, message: /placeholder/ });
});

test('rawLines yields trimmed non-empty lines without parsing them', async (t) => {
  t.deepEqual(await collect(new Stream(chunk, lines(' not json ', '', '{"n":1}')).rawLines()), ['not json', '{"n":1}']);
});

test('a stream serializes as {} in task graphs', (t) => {
  t.is(JSON.stringify({ out: numbers(1) }), '{"out":{}}');
});

test('streamFrom makes a stream over in-memory chunks', async (t) => {
  t.deepEqual(await collect(streamFrom(chunk, [{ n: 7 }, { n: 8 }])), [{ n: 7 }, { n: 8 }]);
});

// ---------- transform ----------

test('transform maps every chunk', async (t) => {
  t.deepEqual(await collect(numbers(1, 2).transform((c) => c.n * 10)), [10, 20]);
});

test('transform moves the iterator: the old stream throws when iterated', async (t) => {
  const s = numbers(1);
  s.transform((c) => c.n);
  await t.throwsAsync(collect(s), { instanceOf: StreamError, message: /was transformed/ });
});

test('a stream can be transformed only once', (t) => {
  const s = numbers(1);
  s.transform((c) => c.n);
  t.throws(() => s.transform((c) => c.n), { instanceOf: StreamError, message: /transformed only once/ });
});

test('a stream being iterated cannot be transformed', async (t) => {
  const s = numbers(1, 2);
  const it = s[Symbol.asyncIterator]();
  await it.next();
  t.throws(() => s.transform((c) => c.n), { instanceOf: StreamError, message: /being or has been iterated/ });
});

test('transforms chain (a departure from the reference, which rejects a second transform): both functions apply in order', async (t) => {
  const twice = numbers(1, 2)
    .transform((c) => c.n + 1)
    .transform((n) => `#${n}`);
  t.deepEqual(await collect(twice), ['#2', '#3']);
});

test('transform still validates the source chunks', async (t) => {
  const s = new Stream(chunk, lines('{"n":1.5}')).transform((c: Chunk) => c.n);
  await t.throwsAsync(collect(s), { instanceOf: ValidationError, message: /stream chunk: n: / });
});

test('transform with a schema validates the transformed chunks', async (t) => {
  const s = numbers(1, -2).transform((c) => ({ pos: c.n }), z.object({ pos: z.number().positive() }));
  const err = await t.throwsAsync(collect(s), { instanceOf: ValidationError });
  t.regex(err!.message, /transformed stream chunk: pos: /);
});

test('transform with a schema yields the schema output (its transforms apply)', async (t) => {
  const s = numbers(1, 2).transform((c) => String(c.n), z.string().transform((x) => `v${x}`));
  t.deepEqual(await collect(s), ['v1', 'v2']);
});

// ---------- NDJSON framing ----------

const bytes = (s: string) => new TextEncoder().encode(s);
async function* parts(...ps: Array<Uint8Array | string>): AsyncGenerator<Uint8Array | string> {
  for (const p of ps) yield p;
}

test('ndjsonLines joins a line split across chunks', async (t) => {
  t.deepEqual(await collect(ndjsonLines(parts(bytes('{"a":'), bytes('1}\n{"a"'), bytes(':2}\n')))), ['{"a":1}', '{"a":2}']);
});

test('ndjsonLines decodes a multi-byte UTF-8 character split across chunks', async (t) => {
  const all = bytes('{"t":"h\u00e9\u{1F600}"}\n');
  const cut1 = all.indexOf(0xc3) + 1; // inside é (2 bytes)
  const cut2 = all.indexOf(0xf0) + 2; // inside the emoji (4 bytes)
  const got = await collect(ndjsonLines(parts(all.subarray(0, cut1), all.subarray(cut1, cut2), all.subarray(cut2))));
  t.deepEqual(got.map((l) => JSON.parse(l) as unknown), [{ t: 'h\u00e9\u{1F600}' }]);
});

test('ndjsonLines yields a last line that has no trailing newline', async (t) => {
  t.deepEqual(await collect(ndjsonLines(parts('{"a":1}\n{"a":2}'))), ['{"a":1}', '{"a":2}']);
});

test('ndjsonLines skips blank lines and CRLF line ends', async (t) => {
  t.deepEqual(await collect(ndjsonLines(parts('\n{"a":1}\r\n\r\n  \n{"a":2}\r\n'))), ['{"a":1}', '{"a":2}']);
});

test('ndjsonLines splits many lines arriving in one chunk', async (t) => {
  const body = Array.from({ length: 50 }, (_, i) => JSON.stringify({ i })).join('\n');
  t.is((await collect(ndjsonLines(parts(bytes(body))))).length, 50);
});

// ---------- mergeStreams ----------

/** A source whose chunks are released one at a time by the test (`release(v)`), ended by `end()`. */
function gated<T>() {
  const queue: Array<IteratorResult<T>> = [];
  let waiter: ((r: IteratorResult<T>) => void) | undefined;
  let closed = false;
  const put = (r: IteratorResult<T>) => (waiter ? (waiter(r), (waiter = undefined)) : queue.push(r));
  const it: AsyncIterableIterator<T> = {
    next: () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise((r) => (waiter = r))),
    return: async () => {
      closed = true;
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => it,
  };
  return { it, release: (v: T) => put({ done: false, value: v }), end: () => put({ done: true, value: undefined }), closed: () => closed };
}

test('mergeStreams yields chunks in the order they arrive, interleaving the streams', async (t) => {
  const text = gated<string>();
  const audio = gated<string>();
  const merged = mergeStreams([text.it, audio.it]);
  const order: string[] = [];
  const take = async () => order.push((await merged.next()).value as string);
  text.release('t0');
  await take();
  audio.release('a0');
  await take();
  text.release('t1');
  await take();
  audio.release('a1');
  text.end();
  await take();
  audio.end();
  t.true((await merged.next()).done);
  t.deepEqual(order, ['t0', 'a0', 't1', 'a1']);
});

test('leaving mergeStreams early closes every stream still open', async (t) => {
  const a = gated<number>();
  const b = gated<number>();
  a.release(1);
  for await (const x of mergeStreams([a.it, b.it])) {
    t.is(x, 1);
    b.release(2); // resolves b's pending next, so its return() can run
    break;
  }
  t.true(a.closed());
  t.true(b.closed());
});
