import test from 'ava';
import { z } from 'zod';
import {
  AppDefinitionError,
  appFromModule,
  defineApp,
  isApp,
  runInRequestScope,
  unitTaskKey,
  UndeclaredTaskError,
  type AppSpec,
} from '../../../../functions/sdk/index.js';
import { EchoTask, MLLMTask } from '../../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../../helpers/fake-dispatcher.js';
import { MODEL } from '../fixtures.js';

const echo = new EchoTask({});
const spec = (over: Record<string, unknown> = {}): AppSpec<{ text: string }, { echo: string }> =>
  ({
    name: 'echo-app',
    tasks: { echo },
    request: z.object({ text: z.string() }),
    response: z.object({ echo: z.string() }),
    serve: async (req: { text: string }) => echo.call(req),
    ...over,
  }) as AppSpec<{ text: string }, { echo: string }>;

/** The problems appFromModule reports for a module whose default export is `def`. */
const problemsOf = (def: unknown): string[] => {
  try {
    appFromModule({ default: def });
  } catch (e) {
    if (e instanceof AppDefinitionError) return e.problems;
    throw e;
  }
  return [];
};

// ---------- defineApp ----------

test('defineApp returns a frozen app marked as an app', (t) => {
  const app = defineApp(spec());
  t.deepEqual([isApp(app), Object.isFrozen(app)], [true, true]);
});

test('an app lists its unit tasks deduplicated, composites expanded', (t) => {
  const a = new MLLMTask({ modelId: MODEL, modalities: ['image'] });
  const b = new MLLMTask({ modelId: MODEL, modalities: ['image'] });
  const app = defineApp(spec({ tasks: { a, b, echo } }));
  t.deepEqual(app.unitTasks(), [a.encoders.image, a.llm, echo]);
});

test('defineApp of a bad spec throws an AppDefinitionError with status 400', (t) => {
  const err = t.throws(() => defineApp(spec({ name: 'Bad Name' })), { instanceOf: AppDefinitionError, message: /invalid app: name must match/ });
  t.is(err!.status, 400);
});

// ---------- appFromModule names every problem ----------

test('appFromModule returns the default export made by defineApp', (t) => {
  const app = defineApp(spec());
  t.is(appFromModule({ default: app }), app);
});

test('a module without a default export is refused, saying how to add one', (t) => {
  t.throws(() => appFromModule({ app: defineApp(spec()) }), { instanceOf: AppDefinitionError, message: /no default export: end the file with `export default defineApp/ });
});

test('a module that did not load to an object is refused', (t) => {
  t.throws(() => appFromModule(undefined), { instanceOf: AppDefinitionError, message: /did not load to an object/ });
});

test('a default export without serve is named', (t) => {
  t.deepEqual(problemsOf(spec({ serve: undefined })), ['serve must be a function: async serve(request) { ... }']);
});

test('a serve taking two parameters is named', (t) => {
  t.deepEqual(problemsOf(spec({ serve: async (_a: unknown, _b: unknown) => ({}) })), ['serve must take exactly one parameter (the request)']);
});

test('a request that is not a zod schema is named', (t) => {
  t.deepEqual(problemsOf(spec({ request: { text: 'string' } })), ['request must be a zod schema']);
});

test('a response that is not a zod schema is named', (t) => {
  t.deepEqual(problemsOf(spec({ response: 'json' })), ['response must be a zod schema']);
});

test('a bad app name is named with the value given', (t) => {
  t.deepEqual(problemsOf(spec({ name: '9lives' })), ['name must match /^[a-z][a-z0-9-]{0,62}$/ (got "9lives")']);
});

test('a non-task in tasks is named by its key', (t) => {
  t.deepEqual(problemsOf(spec({ tasks: { echo, llm: { modelId: MODEL } } })), ['tasks.llm is not a Task (make it with new SomeTask({...}))']);
});

test('tasks that are not an object of named tasks are named', (t) => {
  t.deepEqual(problemsOf(spec({ tasks: [echo] })), ['tasks must be an object of named tasks']);
});

test('every problem of one module is named at once', (t) => {
  const problems = problemsOf({ name: 'X', tasks: { x: 1 }, request: null, response: z.object({}) });
  t.deepEqual(problems.map((p) => p.split(' ')[0]), ['name', 'serve', 'request', 'tasks.x']);
});

test('a valid spec exported without defineApp is refused as not made by defineApp', (t) => {
  t.deepEqual(problemsOf(spec()), ['the default export was not made by defineApp({...})']);
});

test('a default export that is not an object is refused', (t) => {
  t.deepEqual(problemsOf('hello'), ['the app must be an object made by defineApp({...})']);
});

// ---------- declared tasks at record time ----------

test('serve() using a task the app did not declare fails with UndeclaredTaskError when recorded', async (t) => {
  const stranger = new EchoTask({ serviceTimeMs: 7 });
  const app = defineApp(spec({ serve: async (req: { text: string }) => stranger.call(req) }));
  const scope = { allowedTaskKeys: new Set(app.unitTasks().map(unitTaskKey)), dispatcher: new FakeDispatcher() };
  await t.throwsAsync(runInRequestScope(scope, () => app.serve({ text: 'a' })) as Promise<unknown>, { instanceOf: UndeclaredTaskError, message: /echo-7ms/ });
});

test('serve() using its declared tasks runs under the same scope', async (t) => {
  const app = defineApp(spec());
  const scope = { allowedTaskKeys: new Set(app.unitTasks().map(unitTaskKey)), dispatcher: new FakeDispatcher({ output: () => ({ echo: 'ok' }) }) };
  t.deepEqual(await runInRequestScope(scope, () => app.serve({ text: 'a' })), { echo: 'ok' });
});
