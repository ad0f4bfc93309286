import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRequestData } from '../../../../control/cli/data.js';
import { CliError } from '../../../../lib/cli-errors.js';

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cornserve-data-'));
});
test.after.always(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a JSON literal is parsed', async (t) => {
  t.deepEqual(await readRequestData('{"text":"hi","n":[1,2]}'), { text: 'hi', n: [1, 2] });
});

test('a JSON file is read', async (t) => {
  const file = join(dir, 'req.json');
  await writeFile(file, '{"text":"from file"}');
  t.deepEqual(await readRequestData(file), { text: 'from file' });
});

test('a YAML file is read', async (t) => {
  const file = join(dir, 'req.yaml');
  await writeFile(file, 'text: from yaml\nchunks: 2\n');
  t.deepEqual(await readRequestData(file), { text: 'from yaml', chunks: 2 });
});

test('- reads stdin, JSON or YAML', async (t) => {
  t.deepEqual(await readRequestData('-', async () => '{"a":1}'), { a: 1 });
  t.deepEqual(await readRequestData('-', async () => 'a: 1\n'), { a: 1 });
});

test('broken JSON is a CliError naming the problem', async (t) => {
  const err = await t.throwsAsync(readRequestData('{"text":'), { instanceOf: CliError });
  t.regex(err!.message, /not valid JSON/);
});

test('a missing file is a CliError naming the file', async (t) => {
  const err = await t.throwsAsync(readRequestData('nope.yaml'), { instanceOf: CliError });
  t.regex(err!.message, /no file named nope\.yaml/);
});
