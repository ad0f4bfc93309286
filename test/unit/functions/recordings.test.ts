/** Golden recordings: committed task graphs must still load, keep their structure, and match a fresh recording. */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { DataForward, TaskGraph, ValidationError, toJsonValue, type TaskGraphJSON } from '../../../functions/sdk/index.js';
import type { AudioGeneratorInput, ChatRequest, EncoderInput, EncoderOutput, LLMEmbeddingOutput } from '../../../functions/tasks/index.js';
import { RECORDING_CASES, normalizeIds } from '../../fixtures/recordings/cases.js';
import { FakeDispatcher } from '../../helpers/fake-dispatcher.js';

const load = (file: string): TaskGraphJSON => JSON.parse(readFileSync(new URL(`../../fixtures/recordings/${file}`, import.meta.url), 'utf8')) as TaskGraphJSON;

for (const c of RECORDING_CASES) {
  test(`${c.file} loads through TaskGraph.fromJSON and serializes back byte for byte`, (t) => {
    const golden = load(c.file);
    t.deepEqual(TaskGraph.fromJSON(golden).toJSON(), golden);
  });

  test(`${c.file} matches a fresh recording of the same request (ids aside)`, async (t) => {
    const fake = new FakeDispatcher();
    await c.task().call(c.request as never, { dispatcher: fake });
    t.deepEqual(normalizeIds(fake.graphs[0]!), normalizeIds(load(c.file)));
  });

  test(`${c.file} is accepted by the dispatcher: its DataForwards pair up`, async (t) => {
    const { outputs } = await new FakeDispatcher().dispatch(load(c.file), { deadline: Date.now() + 60_000 });
    t.is(outputs.length, load(c.file).invocations.length);
  });
}

test('the MLLM recording: 4 encoder calls in message order, then the LLM fed their forwards in that order', (t) => {
  const graph = TaskGraph.fromJSON(load('mllm-2-images-2-videos.json'));
  const encoders = graph.invocations.slice(0, -1);
  const llm = graph.invocations.at(-1)!;
  t.deepEqual(
    {
      classes: graph.invocations.map((i) => i.task.constructor.name),
      urls: encoders.map((i) => (i.input as EncoderInput).data_urls),
      llmForwards: (llm.input as ChatRequest).cornserve_embeddings.map((d) => d.id),
      streaming: graph.isStreaming,
    },
    {
      classes: ['EncoderTask', 'EncoderTask', 'EncoderTask', 'EncoderTask', 'LLMTask'],
      urls: [['http://media/a.png'], ['http://media/b.mp4'], ['http://media/c.png'], ['http://media/d.mp4']],
      llmForwards: encoders.map((i) => (i.output as EncoderOutput).embeddings[0]!.id),
      streaming: true,
    },
  );
});

test('the any-to-any audio recording: encoder, LLM answer states, then the audio generator fed those states', (t) => {
  const graph = TaskGraph.fromJSON(load('any-to-any-audio.json'));
  const [encoder, states, talker] = graph.invocations;
  t.deepEqual(
    {
      classes: graph.invocations.map((i) => i.task.constructor.name),
      llmForwards: (states!.input as ChatRequest).cornserve_embeddings.map((d) => d.id),
      talkerInput: (talker!.input as AudioGeneratorInput).embeddings.id,
      chunkSize: (talker!.input as AudioGeneratorInput).chunk_size,
      streaming: graph.isStreaming,
    },
    {
      classes: ['EncoderTask', 'LLMAnswerStatesTask', 'AudioGeneratorTask'],
      llmForwards: (encoder!.output as EncoderOutput).embeddings.map((d) => d.id),
      talkerInput: (states!.output as LLMEmbeddingOutput).embeddings.id,
      chunkSize: 25,
      streaming: true,
    },
  );
});

test('loaded recordings hold DataForward instances, not plain JSON', (t) => {
  const graph = TaskGraph.fromJSON(load('any-to-any-audio.json'));
  t.true((graph.invocations[2]!.input as AudioGeneratorInput).embeddings instanceof DataForward);
});

test('a tampered recording (a streaming invocation moved first) is rejected', (t) => {
  const tampered = toJsonValue<TaskGraphJSON>(load('any-to-any-audio.json'));
  tampered.invocations.reverse();
  t.throws(() => TaskGraph.fromJSON(tampered), { instanceOf: ValidationError, message: /invocations\.0: .* only the last invocation/ });
});
