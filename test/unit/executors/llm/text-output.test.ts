import test from 'ava';
import { TextOutput } from '../../../../executors/llm/text-output.js';

const bytes = (s: string) => [...Buffer.from(s, 'utf8')];

function run(out: TextOutput, text: string): { deltas: string[]; stopped: boolean } {
  const deltas: string[] = [];
  for (const b of bytes(text)) {
    const d = out.push(b);
    deltas.push(d.text);
    if (d.stopped) return { deltas, stopped: true };
  }
  deltas.push(out.finish());
  return { deltas, stopped: false };
}

test('text without stop sequences streams byte by byte', (t) => {
  const r = run(new TextOutput(), 'abc');
  t.deepEqual(r.deltas, ['a', 'b', 'c', '']);
});

test('a stop sequence ends the text just before it', (t) => {
  const out = new TextOutput(['END']);
  const r = run(out, 'hello END more');
  t.true(r.stopped);
  t.is(r.deltas.join(''), 'hello ');
  t.is(out.text, 'hello ');
});

test('a possible start of a stop sequence is held back until it cannot be one', (t) => {
  const out = new TextOutput(['END']);
  t.is(out.push(0x45).text, ''); // E
  t.is(out.push(0x4e).text, ''); // EN
  t.is(out.push(0x44).text, ''); // END -> stop
  t.is(out.text, '');
  const out2 = new TextOutput(['END']);
  out2.push(0x45);
  t.is(out2.push(0x58).text, 'EX');
});

test('the earliest of several stop sequences wins', (t) => {
  const out = new TextOutput(['xyz', 'b']);
  t.is(run(out, 'aaxybzz').deltas.join(''), 'aaxy');
});

test('held-back text is released at the end of generation', (t) => {
  const out = new TextOutput(['ab']);
  t.deepEqual(run(out, 'xa').deltas, ['x', '', 'a']);
});

test('a stop sequence with multi-byte characters matches across tokens', (t) => {
  const out = new TextOutput(['✓']);
  const r = run(out, 'ok ✓ no');
  t.true(r.stopped);
  t.is(r.deltas.join(''), 'ok ');
});
