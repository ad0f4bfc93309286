import test from 'ava';
import { Tokenizer, Utf8Stream } from '../../../../executors/llm/tokenizer.js';
import { llmDir } from '../../../helpers/llm.js';

let tok: Tokenizer;
test.before(async () => {
  tok = await Tokenizer.load(await llmDir('tiny-lm-a'));
});

test('text encodes to its UTF-8 bytes and decodes back', (t) => {
  const text = 'héllo ✓ 多模态 🙂';
  const ids = tok.encode(text);
  t.deepEqual(ids, [...Buffer.from(text, 'utf8')]);
  t.is(tok.decode(ids), text);
});

test('special-token names inside text stay plain text', (t) => {
  t.false(tok.encode('<|eos|>').some((id) => tok.isSpecial(id)));
});

test('special tokens decode to no text', (t) => {
  t.is(tok.decode([tok.bos, 104, 105, tok.special('<|end|>')]), 'hi');
});

test('the vocabulary is a multiple of 16 and lists the chat markers', (t) => {
  t.is(tok.vocabSize % 16, 0);
  for (const name of ['<|system|>', '<|user|>', '<|assistant|>', '<|end|>', '<|image|>', '<|audio|>', '<|video|>']) t.true(tok.special(name) >= 256);
  t.true(tok.eos.has(tok.special('<|eos|>')));
});

test('a multi-byte character is held back until its last byte arrives', (t) => {
  const s = new Utf8Stream();
  const bytes = [...Buffer.from('✓', 'utf8')];
  t.is(s.push(bytes[0]!), '');
  t.is(s.push(bytes[1]!), '');
  t.is(s.push(bytes[2]!), '✓');
});

test('invalid bytes become U+FFFD and the stream stays valid UTF-8', (t) => {
  const s = new Utf8Stream();
  const out = [0xff, 0x41, 0x80, 0xe2, 0x41].map((b) => s.push(b)).join('') + s.flush();
  t.is(out, '\uFFFDA\uFFFD\uFFFDA');
  t.is(Buffer.from(out, 'utf8').toString('utf8'), out);
});

test('an incomplete sequence at the end is flushed as U+FFFD', (t) => {
  const s = new Utf8Stream();
  t.is(s.push(0xe2) + s.push(0x9c), '');
  t.is(s.flush(), '\uFFFD');
});
