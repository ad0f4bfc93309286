/** The Geri descriptors: names, launch specs, requests from wired inputs, and reading Geri's replies. */
import test from 'ava';
import { audioChunkLines, audioGeriDescriptor, imageGeriDescriptor, sseEvents } from '../../../../control/descriptors/geri.js';
import { descriptorFor } from '../../../../control/descriptors/registry.js';
import { DataForward } from '../../../../functions/sdk/index.js';
import { AudioGeneratorTask, ImageGeneratorTask } from '../../../../functions/tasks/generator.js';
import { chatChunkSchema } from '../../../../lib/openai.js';

const imageTask = new ImageGeneratorTask({ modelId: 'cornserve/tiny-image-gen', maxBatchSize: 4 });
const audioTask = new AudioGeneratorTask({ modelId: 'cornserve/tiny-audio-gen' });

/** A body as fetch gives it: byte pieces, split at awkward places. */
async function* body(text: string, piece = 7): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += piece) yield bytes.subarray(i, i + piece);
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test('ImageGeneratorTask and AudioGeneratorTask resolve to the Geri descriptors', (t) => {
  t.is(descriptorFor(imageTask), imageGeriDescriptor);
  t.is(descriptorFor(audioTask), audioGeriDescriptor);
});

test('executor names are geri-{modality}-{model basename}', (t) => {
  t.is(imageGeriDescriptor.executorName(imageTask), 'geri-image-tiny-image-gen');
  t.is(audioGeriDescriptor.executorName(audioTask), 'geri-audio-tiny-audio-gen');
});

test('the launch spec runs executors/geri/main.ts on one device with the model, modality and batch size', (t) => {
  t.like(imageGeriDescriptor.launch(imageTask), { kind: 'geri', entry: 'executors/geri/main.ts', image: 'cornserve/geri', devicesPerExecutor: 1 });
  t.deepEqual(imageGeriDescriptor.launch(imageTask).args, ['--model-id', 'cornserve/tiny-image-gen', '--modality', 'image', '--max-batch-size', '4']);
  t.deepEqual(audioGeriDescriptor.launch(audioTask).args, ['--model-id', 'cornserve/tiny-audio-gen', '--modality', 'audio', '--max-batch-size', '1']);
});

test('the image request carries the wired embeddings id and the generation parameters (defaults filled in)', (t) => {
  const df = new DataForward('tensor', 'abc123');
  const input = imageTask.inputSchema.parse({ embeddings: df.toJSON(), height: 64, width: 32 });
  t.deepEqual(imageGeriDescriptor.request(imageTask, input, { generated: '' }), {
    path: '/image/generate', body: { embedding_data_id: 'abc123', height: 64, width: 32, num_inference_steps: 4, skip_tokens: 0 },
  });
});

test('the audio request carries the embeddings id and the chunk sizes', (t) => {
  const input = audioTask.inputSchema.parse({ embeddings: new DataForward('tensor', 'f00d'), chunk_size: 10, left_context_size: 2 });
  t.deepEqual(audioGeriDescriptor.request(audioTask, input, {}), {
    path: '/audio/generate', body: { embedding_data_id: 'f00d', chunk_size: 10, left_context_size: 2 },
  });
});

test('sseEvents reads data and named events, skips comments, joins multi-line data, accepts CRLF', async (t) => {
  const text = ': keep-alive\n\ndata: "a"\n\nevent: done\r\ndata: {"chunks": 1}\r\n\r\ndata: one\ndata: two\n\ndata:tail';
  t.deepEqual(await collect(sseEvents(body(text))), [
    { event: 'message', data: '"a"' },
    { event: 'done', data: '{"chunks": 1}' },
    { event: 'message', data: 'one\ntwo' },
    { event: 'message', data: 'tail' },
  ]);
});

test('audio chunks are re-wrapped into OpenAI chat chunks with the audio in choices[0].delta.audio.data', async (t) => {
  const lines = await collect(audioChunkLines(body('data: "AAE="\n\ndata: "AgM="\n\nevent: done\ndata: {"chunks":2}\n\n')));
  const chunks = lines.map((l) => chatChunkSchema.parse(JSON.parse(l)));
  t.deepEqual(chunks.map((c) => c.choices[0]!.delta.audio?.data), ['AAE=', 'AgM=']);
  t.like(chunks[0], { id: '0', object: 'chat.completion.chunk', model: '' });
});

test('an error event in the audio stream fails it with Geri\'s code and message', async (t) => {
  const text = 'data: "AAE="\n\nevent: error\ndata: {"error":{"code":"MODEL_RUN_FAILED","message":"vocoder: boom"}}\n\n';
  const err = await t.throwsAsync(collect(audioChunkLines(body(text))));
  t.like(err, { code: 'MODEL_RUN_FAILED' });
  t.regex(err!.message, /vocoder: boom/);
});

test('an audio stream cut before its done event fails (the executor stopped mid-stream)', async (t) => {
  const err = await t.throwsAsync(collect(audioChunkLines(body('data: "AAE="\n\n'))));
  t.regex(err!.message, /ended before its done event/);
});

test('an image reply without an image fails the invocation', async (t) => {
  const res = new Response(JSON.stringify({ status: 1, error_message: 'no' }), { headers: { 'content-type': 'application/json' } });
  await t.throwsAsync(imageGeriDescriptor.response(imageTask, { generated: '' }, res), { message: /without an image: no/ });
});
