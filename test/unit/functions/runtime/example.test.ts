import test from 'ava';
import { z } from 'zod';
import { requestExample, requestFields } from '../../../../functions/runtime/example.js';

const schema = z.object({
  text: z.string(),
  n: z.number().int().positive().optional(),
  mode: z.enum(['fast', 'slow']),
  tags: z.array(z.string()),
});

test('the example fills the required fields with sample values', (t) => {
  t.deepEqual(requestExample(schema), { text: 'hello', mode: 'fast', tags: ['hello'] });
});

test('the full example fills the optional fields too', (t) => {
  t.deepEqual(requestExample(schema, true), { text: 'hello', n: 1, mode: 'fast', tags: ['hello'] });
});

test('a schema with no JSON Schema form has no example', (t) => {
  t.is(requestExample(z.object({ at: z.date() })), undefined);
});

test('the fields line marks optional fields', (t) => {
  t.is(requestFields(schema), 'text: string, n?: integer, mode: string, tags: array');
});

test("a field's declared example is used before its default and the generic sample", (t) => {
  const schema = z.object({ url: z.string().meta({ examples: ['data:image/png;base64,AAAA'] }), n: z.number().default(3).meta({ examples: [7] }) });
  t.deepEqual(requestExample(schema, true), { url: 'data:image/png;base64,AAAA', n: 7 });
});
