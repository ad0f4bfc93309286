import test from 'ava';
import { EventQueue } from '../../../sim/engine/queue.js';

test('events run in time order, and in scheduling order at the same instant', (t) => {
  const q = new EventQueue();
  const seen: string[] = [];
  q.at(5, () => seen.push('b5'));
  q.at(1, () => seen.push('a1'));
  q.at(5, () => seen.push('c5'));
  q.at(3, () => q.after(2, () => seen.push('d5-later')));
  q.run();
  t.deepEqual(seen, ['a1', 'b5', 'c5', 'd5-later']);
  t.is(q.now, 5);
});

test('many random events come out sorted (the heap keeps its order)', (t) => {
  const q = new EventQueue();
  const out: number[] = [];
  let x = 12345;
  for (let i = 0; i < 5000; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const tm = x % 1000;
    q.at(tm, () => out.push(tm));
  }
  q.run();
  t.is(out.length, 5000);
  for (let i = 1; i < out.length; i++) if (out[i]! < out[i - 1]!) return t.fail(`event ${i} at ${out[i]} after ${out[i - 1]}`);
  t.pass();
});

test('a negative or NaN delay is refused', (t) => {
  const q = new EventQueue();
  t.throws(() => q.after(-1, () => {}), { instanceOf: RangeError });
  t.throws(() => q.after(NaN, () => {}), { instanceOf: RangeError });
});
