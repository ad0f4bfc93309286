import test from 'ava';
import { z } from 'zod';
import {
  DEFAULT_DEADLINE_MS,
  DeterminismViolationError,
  DispatchError,
  RecordReplayError,
  TaskContext,
  UndeclaredTaskError,
  UnitTask,
  currentContext,
  registerTaskClass,
  ValidationError,
  runInRequestScope,
  unitTaskKey,
  type DispatchOptions,
  type GraphDispatcher,
  type RecordedDispatchOptions,
  type TaskGraph,
} from '../../../../functions/sdk/index.js';
import { Cut } from '../../../../lib/cut-signal.js';
import { EchoTask, EncoderTask, type EchoInput } from '../../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../../helpers/fake-dispatcher.js';
import { EchoEach, MODEL, composite } from '../fixtures.js';

/** A unit task whose input schema is not idempotent: parsing `{text}` twice would append two marks. */
class ShoutTask extends UnitTask<z.ZodObject<{}>, { text: string }, { echo: string }> {
  readonly inputSchema = z.object({ text: z.string().transform((s) => `${s}!`) });
  readonly outputSchema = z.object({ echo: z.string() });
  get name() {
    return 'shout';
  }
  makeRecordOutput() {
    return { echo: '' };
  }
}
registerTaskClass(ShoutTask);

/** Answers each echo invocation with its input text upper-cased: real outputs differ from placeholders. */
const upper = () => new FakeDispatcher({ output: (inv) => ({ echo: (inv.input as EchoInput).text.toUpperCase() }) });

/** A composite whose control flow depends on state, not on the input: it makes one more call each time it runs. */
const growing = () => {
  const echo = new EchoTask({});
  let runs = 0;
  return composite((input: EchoInput) => {
    runs++;
    return Array.from({ length: runs }, () => echo.invoke(input).echo);
  });
};

// ---------- record -> dispatch -> replay ----------

test('replay returns the real outputs in call order', async (t) => {
  t.deepEqual(await new EchoEach().call({ texts: ['a', 'b', 'c'] }, { dispatcher: upper() }), ['A', 'B', 'C']);
});

test('one graph holds every unit-task call of one call(), in call order', async (t) => {
  const fake = upper();
  await new EchoEach().call({ texts: ['a', 'b', 'c'] }, { dispatcher: fake });
  t.deepEqual(fake.graphs.map((g) => g.invocations.map((i) => i.input)), [[{ text: 'a' }, { text: 'b' }, { text: 'c' }]]);
});

test('call() of a unit task returns the dispatcher output', async (t) => {
  t.deepEqual(await new EchoTask({}).call({ text: 'x' }, { dispatcher: upper() }), { echo: 'X' });
});

test('a composite that calls no unit task returns without dispatching', async (t) => {
  const fake = upper();
  t.deepEqual(await new EchoEach().call({ texts: [] }, { dispatcher: fake }), []);
  t.is(fake.dispatched.length, 0);
});

test('the recorded input is a copy: mutating it after invoke() does not change the graph', async (t) => {
  const echo = new EchoTask({});
  const mutating = composite((input: EchoInput) => {
    const req = { text: input.text };
    const out = echo.invoke(req).echo;
    req.text = 'changed';
    return out;
  });
  const fake = upper();
  await mutating.call({ text: 'orig' }, { dispatcher: fake });
  t.deepEqual(fake.graphs[0]!.invocations[0]!.input, { text: 'orig' });
});

test('an invalid call() input is a ValidationError and nothing is dispatched', async (t) => {
  const fake = upper();
  await t.throwsAsync(new EchoTask({}).call({ text: 5 } as never, { dispatcher: fake }), { instanceOf: ValidationError, message: /text: / });
  t.is(fake.dispatched.length, 0);
});

test('a unit task input rejected by validateInput fails at record time', async (t) => {
  const encoder = new EncoderTask({ modality: 'image', modelIds: [MODEL] });
  await t.throwsAsync(encoder.call({ model_id: 'other', data_urls: ['u'] }, { dispatcher: upper() }), {
    instanceOf: ValidationError,
    message: /model_id: other is not served by this encoder/,
  });
});

test('a dispatcher failure rejects call() with that error', async (t) => {
  const boom = new DispatchError('executor crashed', 502);
  const fake = new FakeDispatcher({ fail: () => boom });
  const err = await t.throwsAsync(new EchoTask({}).call({ text: 'a' }, { dispatcher: fake }));
  t.is(err, boom);
});

test('a dispatcher answering with the wrong number of outputs is a DispatchError', async (t) => {
  const short = { dispatch: async () => ({ outputs: [] }) };
  await t.throwsAsync(new EchoTask({}).call({ text: 'a' }, { dispatcher: short }), { instanceOf: DispatchError, message: /0 outputs for 1 invocations/ });
});

test('a dispatcher output that does not match the task output schema is a DispatchError naming the field', async (t) => {
  const fake = new FakeDispatcher({ output: () => ({ echo: 1 }) });
  await t.throwsAsync(new EchoTask({}).call({ text: 'a' }, { dispatcher: fake }), { instanceOf: DispatchError, message: /output of echo-0ms .*echo: / });
});

// ---------- misuse fails loudly ----------

test('a record inside a record is refused', (t) => {
  const ctx = new TaskContext();
  t.throws(() => ctx.record(() => ctx.record(() => undefined)), { instanceOf: RecordReplayError, message: /record inside a record/ });
});

test('a record during replay is refused', (t) => {
  const ctx = new TaskContext();
  ctx.record(() => undefined);
  t.throws(() => ctx.replay(() => ctx.record(() => undefined)), { instanceOf: RecordReplayError, message: /cannot record while replaying/ });
});

test('a replay inside a replay is refused', (t) => {
  const ctx = new TaskContext();
  ctx.record(() => undefined);
  t.throws(() => ctx.replay(() => ctx.replay(() => undefined)), { instanceOf: RecordReplayError, message: /replay inside a replay/ });
});

test('a context cannot record twice', (t) => {
  const ctx = new TaskContext();
  ctx.record(() => undefined);
  t.throws(() => ctx.record(() => undefined), { instanceOf: RecordReplayError, message: /used once/ });
});

test('a context cannot replay twice', (t) => {
  const ctx = new TaskContext();
  ctx.record(() => undefined);
  ctx.replay(() => undefined);
  t.throws(() => ctx.replay(() => undefined), { instanceOf: RecordReplayError, message: /context that is done/ });
});

test('a context refuses a second set of outputs', (t) => {
  const ctx = new TaskContext();
  ctx.record(() => undefined);
  ctx.setOutputs({ outputs: [] });
  t.throws(() => ctx.setOutputs({ outputs: [] }), { instanceOf: RecordReplayError, message: /not reusable/ });
});

test('replay with no outputs left is a DeterminismViolationError', async (t) => {
  await t.throwsAsync(growing().call({ text: 'a' }, { dispatcher: upper() }), {
    instanceOf: DeterminismViolationError,
    message: /has no more outputs to replay: record made 1 calls/,
  });
});

test('replay making fewer calls than record is a DeterminismViolationError', async (t) => {
  const echo = new EchoTask({});
  let calls = 2;
  const shrinking = composite((input: EchoInput) => Array.from({ length: calls-- }, () => echo.invoke(input).echo));
  await t.throwsAsync(shrinking.call({ text: 'a' }, { dispatcher: upper() }), {
    instanceOf: DeterminismViolationError,
    message: /replay made 1 unit-task calls but record made 2/,
  });
});

test('replay calling a different task than record did is a DeterminismViolationError', async (t) => {
  const [a, b] = [new EchoTask({ serviceTimeMs: 1 }), new EchoTask({ serviceTimeMs: 2 })];
  let first = true;
  const swapping = composite((input: EchoInput) => {
    const task = first ? a : b;
    first = false;
    return task.invoke(input).echo;
  });
  await t.throwsAsync(swapping.call({ text: 'a' }, { dispatcher: upper() }), {
    instanceOf: DeterminismViolationError,
    message: /replay call #0 is echo-2ms .* but record call #0 was echo-1ms/,
  });
});

test('invoke() of a unit task outside call() is refused', (t) => {
  t.throws(() => new EchoTask({}).invoke({ text: 'a' }), { instanceOf: RecordReplayError, message: /outside task\.call\(\)/ });
});

test('call() inside invoke() fails the outer call and dispatches nothing', async (t) => {
  const echo = new EchoTask({});
  const callsInside = composite((input: EchoInput) => {
    void echo.call(input);
    return echo.invoke(input);
  });
  const fake = upper();
  await t.throwsAsync(callsInside.call({ text: 'a' }, { dispatcher: fake }), {
    instanceOf: RecordReplayError,
    message: /call\(\) inside invoke\(\)/,
  });
  t.is(fake.dispatched.length, 0);
});

test('an async invoke() is refused, and its abandoned body does not leak an unhandled rejection', async (t) => {
  const echo = new EchoTask({});
  const asyncComposite = composite(async (input: EchoInput) => {
    await Promise.resolve();
    return echo.invoke(input); // runs after record gave up: throws inside the abandoned promise
  });
  let unhandled: unknown;
  const onUnhandled = (e: unknown) => (unhandled = e);
  process.on('unhandledRejection', onUnhandled);
  try {
    await t.throwsAsync(asyncComposite.call({ text: 'a' }, { dispatcher: upper() }), {
      instanceOf: RecordReplayError,
      message: /must be synchronous/,
    });
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  t.is(unhandled, undefined);
});

test('a unit task call() parses its input once: a transforming input schema is applied once in the recorded graph', async (t) => {
  const fake = upper();
  await new ShoutTask({}).call({ text: 'a' }, { dispatcher: fake });
  t.deepEqual(fake.graphs[0]!.invocations[0]!.input, { text: 'a!' });
});

test('the current context exists only while record or replay runs, not while the graph is dispatched', async (t) => {
  let during: unknown = 'unset';
  const probe = new FakeDispatcher({ output: () => ((during = currentContext()), { echo: 'x' }) });
  const echo = new EchoTask({});
  let inside: unknown;
  await composite((input: EchoInput) => ((inside = currentContext()), echo.invoke(input))).call({ text: 'a' }, { dispatcher: probe });
  t.true(inside instanceof TaskContext);
  t.is(during, undefined);
  t.is(currentContext(), undefined);
});

// ---------- request scope: declared tasks, deadlines ----------

test('a unit task the app did not declare fails at record time with UndeclaredTaskError', async (t) => {
  const declared = new EchoTask({ serviceTimeMs: 1 });
  const other = new EchoTask({ serviceTimeMs: 2 });
  const fake = upper();
  const scope = { allowedTaskKeys: new Set([unitTaskKey(declared)]), dispatcher: fake };
  await t.throwsAsync(runInRequestScope(scope, () => other.call({ text: 'a' })), { instanceOf: UndeclaredTaskError, message: /echo-2ms is used by serve\(\)/ });
  t.is(fake.dispatched.length, 0);
});

test('a task equivalent to a declared one is allowed by the request scope', async (t) => {
  const scope = { allowedTaskKeys: new Set([unitTaskKey(new EchoTask({}))]), dispatcher: upper() };
  t.deepEqual(await runInRequestScope(scope, () => new EchoTask({}).call({ text: 'a' })), { echo: 'A' });
});

test('the request scope deadline reaches the dispatcher', async (t) => {
  const fake = upper();
  const deadline = Date.now() + 60_000;
  await runInRequestScope({ deadline, dispatcher: fake }, () => new EchoTask({}).call({ text: 'a' }));
  t.is(fake.dispatched[0]!.options.deadline, deadline);
});

test('the earliest of the scope deadline and the call timeout wins', async (t) => {
  const fake = upper();
  const deadline = Date.now() + 60_000;
  await runInRequestScope({ deadline, dispatcher: fake }, () => new EchoTask({}).call({ text: 'a' }, { deadline: deadline - 1000 }));
  t.is(fake.dispatched[0]!.options.deadline, deadline - 1000);
});

test('without any deadline the dispatcher gets the default of 5 minutes from now', async (t) => {
  const fake = upper();
  const before = Date.now();
  await new EchoTask({}).call({ text: 'a' }, { dispatcher: fake });
  const d = fake.dispatched[0]!.options.deadline;
  t.true(d >= before + DEFAULT_DEADLINE_MS && d <= Date.now() + DEFAULT_DEADLINE_MS);
});

test('an already-passed deadline fails with DEADLINE_EXCEEDED before dispatch', async (t) => {
  const fake = upper();
  const err = await t.throwsAsync(runInRequestScope({ deadline: Date.now() - 1, dispatcher: fake }, () => new EchoTask({}).call({ text: 'a' })), {
    instanceOf: DispatchError,
  });
  t.deepEqual([err!.code, err!.status, fake.dispatched.length], ['DEADLINE_EXCEEDED', 504, 0]);
});

test('the request scope trace context and app id reach the dispatcher', async (t) => {
  const fake = upper();
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  await runInRequestScope({ traceparent, appId: 'app-1', dispatcher: fake }, () => new EchoTask({}).call({ text: 'a' }));
  t.like(fake.dispatched[0]!.options, { traceparent, appId: 'app-1' });
});

test('the call dispatcher option wins over the request scope dispatcher', async (t) => {
  const scoped = upper();
  const explicit = upper();
  await runInRequestScope({ dispatcher: scoped }, () => new EchoTask({}).call({ text: 'a' }, { dispatcher: explicit }));
  t.deepEqual([scoped.dispatched.length, explicit.dispatched.length], [0, 1]);
});

test('aborting the call signal cancels a dispatch in progress', async (t) => {
  const fake = new FakeDispatcher({ delayMs: 30_000 });
  const abort = new AbortController();
  const call = new EchoTask({}).call({ text: 'a' }, { dispatcher: fake, signal: abort.signal });
  setImmediate(() => abort.abort());
  await t.throwsAsync(call, { instanceOf: DispatchError, message: /caller went away/ });
});

/** A dispatcher that takes recorded graphs (as the in-process one does); its JSON entry must not be used then. */
function recordedOnly() {
  const got: Array<{ graph: TaskGraph; options: RecordedDispatchOptions }> = [];
  const dispatcher: GraphDispatcher = {
    dispatch: (_graph, _options: DispatchOptions) => Promise.reject(new Error('the JSON entry was used')),
    dispatchRecorded: async (graph, options) => {
      got.push({ graph, options });
      return { outputs: graph.invocations.map((inv) => ({ echo: (inv.input as EchoInput).text })) };
    },
  };
  return { dispatcher, got };
}

test('call() hands a dispatcher that takes recorded graphs the graph itself and the request scope\'s cut as its signal', async (t) => {
  const { dispatcher, got } = recordedOnly();
  const cut = new Cut();
  const out = await runInRequestScope({ dispatcher, cancel: cut, get signal() { return cut.abortSignal; } }, () => new EchoTask({}).call({ text: 'a' }));
  t.deepEqual(out, { echo: 'a' });
  t.is(got.length, 1);
  t.deepEqual(got[0]!.graph.invocations.map((inv) => inv.input), [{ text: 'a' }]);
  t.is(got[0]!.options.signal, cut);
});

test('a call signal beside the request scope\'s reaches a recorded-graph dispatcher joined with the scope\'s', async (t) => {
  const { dispatcher, got } = recordedOnly();
  const cut = new Cut();
  const own = new AbortController();
  await runInRequestScope({ dispatcher, cancel: cut, get signal() { return cut.abortSignal; } }, () => new EchoTask({}).call({ text: 'a' }, { signal: own.signal }));
  const signal = got[0]!.options.signal!;
  t.false(signal.aborted);
  cut.abort(new Error('the client left'));
  t.true(signal.aborted);
});

