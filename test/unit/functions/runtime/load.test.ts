import test from 'ava';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Task } from '../../../../functions/sdk/index.js';
import { EchoTask } from '../../../../functions/tasks/echo.js';
import { loadAppSource, mapImport, transpileApp } from '../../../../functions/runtime/load.js';
import { AppSourceError } from '../../../../functions/runtime/errors.js';

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cornserve-load-'));
});
test.after.always(async () => {
  await rm(dir, { recursive: true, force: true });
});

const problemsOf = async (source: string, name: string) => {
  const err = await loadAppSource(source, join(dir, `${name}.ts`)).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AppSourceError)) throw new Error(`expected an AppSourceError, got ${String(err)}`);
  return err.problems;
};

const VALID = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: 3 });
export default defineApp({
  name: 'valid', tasks: { echo },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) { return echo.call({ text: req.text }); },
});`;

test('cornserve/sdk maps to the runtime\'s own SDK module', (t) => {
  const mapped = mapImport('cornserve/sdk');
  t.deepEqual(mapped, { url: new URL('../../../../functions/sdk/index.ts', import.meta.url).href });
});

test('a relative import of functions/tasks/<file> maps to that file', (t) => {
  t.deepEqual(mapImport('../tasks/echo.js'), { url: new URL('../../../../functions/tasks/echo.ts', import.meta.url).href });
});

test('a relative import of another file is refused', (t) => {
  const mapped = mapImport('./helpers.js');
  t.true('problem' in mapped && mapped.problem.includes('single file'));
});

test('an uninstalled package is refused by name', (t) => {
  const mapped = mapImport('left-pad-not-here');
  t.true('problem' in mapped && mapped.problem.includes('left-pad-not-here'));
});

test('transpiled imports point at absolute file URLs', async (t) => {
  const js = await transpileApp(VALID, join(dir, 'valid.ts'));
  t.regex(js, /from "file:\/\/\/.*functions\/sdk\/index\.ts"/);
  t.notRegex(js, /from "cornserve\//);
});

test('a valid app loads with its unit tasks as instances of the runtime\'s task classes', async (t) => {
  const app = await loadAppSource(VALID, join(dir, 'valid.ts'));
  t.is(app.name, 'valid');
  const [task] = app.unitTasks();
  t.true(task instanceof EchoTask && task instanceof Task);
  t.deepEqual((task as EchoTask).config, { serviceTimeMs: 3 });
});

test('the transpiled module file is removed after loading', async (t) => {
  await loadAppSource(VALID.replace("'valid'", "'tidy'"), join(dir, 'tidy.ts'));
  t.deepEqual((await readdir(dir)).filter((f) => f.startsWith('tidy')), []);
});

test('a syntax error is reported with its line and column', async (t) => {
  const problems = await problemsOf('export default {\n  name: "x",,\n};\n', 'syntax');
  t.is(problems.length, 1);
  t.regex(problems[0]!, /^syntax error at syntax\.ts:2:\d+/);
});

test('an app without serve is reported as such', async (t) => {
  const src = `import { z } from 'zod'; import { defineApp } from 'cornserve/sdk';
export default defineApp({ name: 'x', tasks: {}, request: z.object({}), response: z.object({}) } as any);`;
  t.true((await problemsOf(src, 'noserve')).some((p) => p.startsWith('serve must be a function')));
});

test('a request that is not a zod schema is reported as such', async (t) => {
  const src = `import { z } from 'zod'; import { defineApp } from 'cornserve/sdk';
export default defineApp({ name: 'x', tasks: {}, request: { text: 'string' } as any, response: z.object({}), async serve() { return {}; } });`;
  t.deepEqual(await problemsOf(src, 'norequest'), ['request must be a zod schema']);
});

test('a module without a default export is reported as such', async (t) => {
  t.true((await problemsOf('export const x = 1;', 'nodefault'))[0]!.startsWith('no default export'));
});

test('a module that throws while loading is reported with the error', async (t) => {
  t.deepEqual(await problemsOf("throw new Error('boom at load');", 'throws'), ['the module threw while loading: Error: boom at load']);
});
