import test from 'ava';
import { z } from 'zod';
import {
  dedupeUnitTasks,
  defineApp,
  discoverUnitTasks,
  rootUnitTaskClass,
  unitTaskKey,
  type UnitTaskClass,
} from '../../../../functions/sdk/index.js';
import {
  AudioGeneratorTask,
  EchoBaseTask,
  EchoStreamTask,
  EchoTask,
  EncoderTask,
  ImageGeneratorTask,
  LLMBaseTask,
  LLMEmbeddingTask,
  LLMTask,
  MLLMTask,
} from '../../../../functions/tasks/index.js';
import { EchoEach, MODEL, Wrapper } from '../fixtures.js';

// ---------- root unit-task class ----------

test('LLMTask and LLMEmbeddingTask resolve to their root LLMBaseTask', (t) => {
  t.deepEqual([rootUnitTaskClass(LLMTask), rootUnitTaskClass(LLMEmbeddingTask)], [LLMBaseTask as unknown, LLMBaseTask as unknown]);
});

test('EncoderTask, a direct subclass of UnitTask, is its own root', (t) => {
  t.is(rootUnitTaskClass(EncoderTask), EncoderTask);
});

test('a subclass of a concrete unit task inherits that task root', (t) => {
  class LoudEchoTask extends EchoTask {}
  t.is(new LoudEchoTask({}).rootClass, EchoBaseTask as unknown as UnitTaskClass);
});

test('rootUnitTaskClass of a class that is not a unit task throws', (t) => {
  class NotATask {
    static configSchema = z.object({});
  }
  t.throws(() => rootUnitTaskClass(NotATask as unknown as UnitTaskClass), { message: /NotATask is not a UnitTask class/ });
});

// ---------- equivalence ----------

const encoder = (modality: 'image' | 'video' | 'audio', modelIds: string[], descriptor?: string) =>
  new EncoderTask({ modality, modelIds }, descriptor ? { descriptor } : {});

test('encoders with equal model ids and modality are equivalent', (t) => {
  t.true(encoder('image', ['a', 'b']).isEquivalentTo(encoder('image', ['a', 'b'])));
});

test('encoder model ids are a set: order and repeats do not matter', (t) => {
  t.true(encoder('image', ['b', 'a', 'b']).isEquivalentTo(encoder('image', ['a', 'b'])));
});

test('encoders with different model ids are not equivalent', (t) => {
  t.false(encoder('image', ['a']).isEquivalentTo(encoder('image', ['a', 'b'])));
});

test('encoders with different modalities are not equivalent', (t) => {
  t.false(encoder('image', ['a']).isEquivalentTo(encoder('video', ['a'])));
});

test('the task id does not count for equivalence', (t) => {
  const a = encoder('image', ['a']);
  const b = encoder('image', ['a']);
  t.not(a.id, b.id);
  t.is(unitTaskKey(a), unitTaskKey(b));
});

test('LLMTask and LLMEmbeddingTask with equal config are equivalent', (t) => {
  t.true(new LLMTask({ modelId: MODEL }).isEquivalentTo(new LLMEmbeddingTask({ modelId: MODEL })));
});

test('LLMTask and LLMEmbeddingTask with different config are not equivalent', (t) => {
  t.false(new LLMTask({ modelId: MODEL }).isEquivalentTo(new LLMEmbeddingTask({ modelId: MODEL, receiveEmbeddings: false })));
});

test('a default config value equals the same value given explicitly', (t) => {
  t.true(new LLMTask({ modelId: MODEL }).isEquivalentTo(new LLMTask({ modelId: MODEL, receiveEmbeddings: true })));
});

test('the execution descriptor counts for equivalence', (t) => {
  t.false(encoder('image', ['a'], 'onnx-cpu').isEquivalentTo(encoder('image', ['a'])));
});

test('equal descriptors keep tasks equivalent', (t) => {
  t.true(encoder('image', ['a'], 'onnx-cpu').isEquivalentTo(encoder('image', ['a'], 'onnx-cpu')));
});

test('unit tasks with different roots are never equivalent, even with equal configs', (t) => {
  t.false(new ImageGeneratorTask({ modelId: 'g' }).isEquivalentTo(new AudioGeneratorTask({ modelId: 'g' })));
});

test('a non-task is not equivalent to a unit task', (t) => {
  t.false(new EchoTask({}).isEquivalentTo({ config: {} }));
});

test('an invalid unit task config fails at construction with the field path', (t) => {
  t.throws(() => new EncoderTask({ modality: 'image', modelIds: [] }), { message: /modelIds: at least one model id/ });
});

// ---------- discovery and dedupe ----------

test('two apps declaring equivalent tasks deduplicate to one unit task per equivalence class', (t) => {
  const app = (name: string) =>
    defineApp({
      name,
      tasks: { mllm: new MLLMTask({ modelId: MODEL, modalities: ['image'] }), echo: new EchoTask({}) },
      request: z.object({}),
      response: z.object({}),
      serve: async () => ({}),
    });
  const both = dedupeUnitTasks([...app('one').unitTasks(), ...app('two').unitTasks()]);
  t.deepEqual(both.map((u) => u.rootClass.name).sort(), ['EchoBaseTask', 'EncoderTask', 'LLMBaseTask']);
});

test('dedupe keeps the first task of each equivalence class', (t) => {
  const first = new EchoTask({});
  t.is(dedupeUnitTasks([first, new EchoStreamTask({}), new EchoTask({})])[0], first);
});

test('a composite inside a composite has its unit tasks discovered recursively', (t) => {
  const echo = new EchoTask({ serviceTimeMs: 1 });
  const mllm = new MLLMTask({ modelId: MODEL, modalities: ['image', 'video'] });
  const outer = new Wrapper([new Wrapper([new EchoEach(echo), mllm])]);
  const found = discoverUnitTasks([outer]);
  t.deepEqual(found, [echo, mllm.encoders.image!, mllm.encoders.video!, mllm.llm]);
});

test('a task reachable twice is discovered once', (t) => {
  const echo = new EchoTask({});
  t.deepEqual(discoverUnitTasks([new Wrapper([echo, echo]), echo]), [echo]);
});

test('subtasks held in a Map or a plain object are discovered', (t) => {
  const a = new EchoTask({ serviceTimeMs: 1 });
  const b = new EchoTask({ serviceTimeMs: 2 });
  const holder = new Wrapper([]);
  Object.assign(holder, { byName: new Map([['a', a]]), nested: { b } });
  t.deepEqual(discoverUnitTasks([holder]), [a, b]);
});

test('a unit task config is frozen: equivalence cannot change after construction', (t) => {
  const task = new EchoTask({ serviceTimeMs: 3 });
  t.throws(() => {
    (task.config as { serviceTimeMs: number }).serviceTimeMs = 4;
  }, { instanceOf: TypeError });
});

test('a unit task config is frozen all the way down: a nested list cannot change the cached equivalence key', (t) => {
  const task = new EncoderTask({ modality: 'image', modelIds: [MODEL] });
  const key = unitTaskKey(task);
  t.throws(() => (task.config.modelIds as string[]).push('other/model'), { instanceOf: TypeError });
  t.is(unitTaskKey(task), key);
  t.true(task.isEquivalentTo(new EncoderTask({ modality: 'image', modelIds: [MODEL] })));
});
