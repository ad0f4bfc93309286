/**
 * Type tests for the SDK generics. `tsc --noEmit` checks them: an `Equal` that is false, or a `@ts-expect-error`
 * line that compiles, fails the type check. Each test also runs what it types, so it checks the runtime too.
 */
import test from 'ava';
import { z } from 'zod';
import { CompositeTask, DataForward, defineApp, streamFrom, type Stream } from '../../../functions/sdk/index.js';
import {
  EchoStreamTask,
  EchoTask,
  EncoderTask,
  ImageGeneratorTask,
  MLLMTask,
  type ChatChunk,
  type EchoChunk,
  type EncoderOutput,
} from '../../../functions/tasks/index.js';
import { FakeDispatcher, textChunk } from '../../helpers/fake-dispatcher.js';
import { EchoEach, MODEL, chat, text } from './fixtures.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when `_value`'s type is exactly T. */
const exactly = <T>() => <V>(_value: V & (Equal<V, T> extends true ? unknown : never)): void => undefined;

const upper = () => new FakeDispatcher({ output: (inv) => ({ echo: (inv.input as { text: string }).text.toUpperCase() }) });

test('a composite call() resolves to its invoke() return type', async (t) => {
  const out = await new EchoEach().call({ texts: ['a'] }, { dispatcher: upper() });
  exactly<string[]>()(out);
  t.deepEqual(out, ['A']);
});

test('a unit task call() resolves to its output schema type', async (t) => {
  const out = await new EchoTask({}).call({ text: 'a' }, { dispatcher: upper() });
  exactly<{ echo: string }>()(out);
  t.is(out.echo, 'A');
});

test('call() accepts the input schema input type: fields with defaults may be left out', async (t) => {
  const fake = new FakeDispatcher({ streamChunks: [textChunk('ok')] });
  // cornserve_embeddings has a default: a plain OpenAI request is enough.
  const stream = await new MLLMTask({ modelId: MODEL }).call({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { dispatcher: fake });
  t.deepEqual(fake.graphs[0]!.invocations[0]!.input, { model: MODEL, messages: [{ role: 'user', content: 'hi' }], cornserve_embeddings: [] });
  void stream;
});

test('call() rejects inputs of the wrong type at compile time and at run time', async (t) => {
  const generator = new ImageGeneratorTask({ modelId: 'org/gen' });
  // @ts-expect-error height must be a number
  const call = generator.call({ embeddings: DataForward.tensor(), height: '8', width: 8 }, { dispatcher: new FakeDispatcher() });
  await t.throwsAsync(call, { message: /height: / });
});

test('a streaming task output is a Stream of its chunk type', async (t) => {
  const stream = await new EchoStreamTask({}).call({ text: 'a', chunks: 1 }, { dispatcher: new FakeDispatcher({ streamChunks: [{ echo: 'a', index: 0 }] }) });
  exactly<Stream<EchoChunk>>()(stream);
  const seen: EchoChunk[] = [];
  for await (const c of stream) seen.push(c);
  t.deepEqual(seen, [{ echo: 'a', index: 0 }]);
});

test('an MLLM call() yields OpenAI chat chunks', async (t) => {
  const stream = await new MLLMTask({ modelId: MODEL }).call(chat(text('hi')), { dispatcher: new FakeDispatcher({ streamChunks: [textChunk('x')] }) });
  exactly<Stream<ChatChunk>>()(stream);
  for await (const c of stream) t.is(c.choices[0]!.delta.content, 'x');
});

test('transform() types the new stream by the function result', async (t) => {
  const s = streamFrom(z.object({ n: z.number() }), [{ n: 2 }]).transform((c) => c.n * 2);
  exactly<Stream<number>>()(s);
  for await (const n of s) t.is(n, 4);
});

test('an encoder output holds tensor DataForwards', async (t) => {
  const out: EncoderOutput = new EncoderTask({ modality: 'image', modelIds: [MODEL] }).makeRecordOutput({ model_id: MODEL, data_urls: ['u'] });
  exactly<DataForward<'tensor'>[]>()(out.embeddings);
  // @ts-expect-error a tensor forward is not a bytes forward
  const bytes: DataForward<'bytes'> = out.embeddings[0]!;
  t.is(bytes.dataType as string, 'tensor');
});

test('unit task configs are typed: a bad modality does not compile and is refused at run time', (t) => {
  // @ts-expect-error 'smell' is not a modality
  t.throws(() => new EncoderTask({ modality: 'smell', modelIds: [MODEL] }), { message: /modality/ });
});

test('invoke() must be synchronous: an async invoke does not compile', async (t) => {
  class AsyncEcho extends CompositeTask<{ text: string }, string> {
    readonly echo = new EchoTask({});
    get name() {
      return 'async-echo';
    }
    // @ts-expect-error Promise<string> is not string
    async invoke(input: { text: string }): Promise<string> {
      return this.echo.invoke(input).echo;
    }
  }
  await t.throwsAsync(new AsyncEcho().call({ text: 'a' }, { dispatcher: upper() }), { message: /must be synchronous/ });
});

test('defineApp infers serve() request and response types from the zod schemas', async (t) => {
  const app = defineApp({
    name: 'typed',
    tasks: {},
    request: z.object({ n: z.number() }),
    response: z.object({ doubled: z.number() }),
    serve: async (req) => {
      exactly<{ n: number }>()(req);
      return { doubled: req.n * 2 };
    },
  });
  defineApp({
    name: 'typed-bad',
    tasks: {},
    request: z.object({ n: z.number() }),
    response: z.object({ doubled: z.number() }),
    // @ts-expect-error the response must match the response schema
    serve: async (req) => ({ doubled: String(req.n) }),
  });
  t.deepEqual(await app.serve({ n: 2 }), { doubled: 4 });
});
