import test from 'ava';
import { dedupeUnitTasks, discoverUnitTasks, type TaskGraphJSON } from '../../../../functions/sdk/index.js';
import { AnyToAnyTask, type AudioGeneratorInput, type ChatChunk, type LLMEmbeddingOutput } from '../../../../functions/tasks/index.js';
import { FakeDispatcher, textChunk } from '../../../helpers/fake-dispatcher.js';
import { MODEL, chat, image, recordGraph, text } from '../fixtures.js';

const AUDIO_MODEL = 'org/tiny-audio-gen';
const a2a = (extra: { chunkSize?: number; leftContextSize?: number } = {}) =>
  new AnyToAnyTask({ modelId: MODEL, modalities: ['image'], audioModelId: AUDIO_MODEL, ...extra });
const request = (returnAudio?: boolean) => ({ ...chat(text('describe'), image('http://x/a.png')), ...(returnAudio === undefined ? {} : { return_audio: returnAudio }) });
const classes = (g: TaskGraphJSON) => [g.invocations.map((inv) => inv.task_class), g.is_streaming];

test('without return_audio: image encoder, then the LLM streaming text', async (t) => {
  t.deepEqual(classes(await recordGraph(a2a(), request())), [['EncoderTask', 'LLMTask'], true]);
});

test('return_audio false is the same text graph', async (t) => {
  t.deepEqual(classes(await recordGraph(a2a(), request(false))), [['EncoderTask', 'LLMTask'], true]);
});

test('with return_audio: image encoder, the LLM streaming its answer\'s hidden states, then the audio generator streaming', async (t) => {
  t.deepEqual(classes(await recordGraph(a2a(), request(true))), [['EncoderTask', 'LLMAnswerStatesTask', 'AudioGeneratorTask'], true]);
});

test('with return_audio the audio generator consumes the LLM answer states DataForward', async (t) => {
  const g = await recordGraph(a2a(), request(true));
  t.is((g.invocations[2]!.input as AudioGeneratorInput).embeddings.id, (g.invocations[1]!.output as LLMEmbeddingOutput).embeddings.id);
});

test('chunk and left-context sizes reach the audio generator input', async (t) => {
  const g = await recordGraph(a2a({ chunkSize: 25, leftContextSize: 5 }), request(true));
  t.like(g.invocations[2]!.input, { chunk_size: 25, left_context_size: 5 });
});

test('return_audio does not reach the LLM request', async (t) => {
  const g = await recordGraph(a2a(), request(true));
  t.false('return_audio' in (g.invocations[1]!.input as object));
});

test('the text and the audio LLM tasks deduplicate to one LLM deployment', (t) => {
  const units = dedupeUnitTasks(discoverUnitTasks([a2a()]));
  t.deepEqual(units.map((u) => u.constructor.name), ['EncoderTask', 'LLMTask', 'AudioGeneratorTask']);
});

test('call() with return_audio returns the audio generator real stream', async (t) => {
  const audioChunk = { ...textChunk('', 0), choices: [{ index: 0, delta: { audio: { data: 'AAAA' } }, finish_reason: null }] };
  const fake = new FakeDispatcher({ streamChunks: [audioChunk] });
  const chunks: ChatChunk[] = [];
  for await (const c of await a2a().call(request(true), { dispatcher: fake })) chunks.push(c);
  t.deepEqual(chunks.map((c) => c.choices[0]!.delta.audio?.data), ['AAAA']);
});
