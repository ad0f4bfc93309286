/**
 * Geri generating audio through HTTP (SSE of base64 PCM16 chunks): a real Geri process attached to a real
 * sidecar node, embeddings sent by a producer client. Serial: the sidecar's memory accounting is node-wide.
 */
import test from 'ava';
import { sseEvents } from '../../../control/descriptors/geri.js';
import { generateAudio } from '../../../executors/models/generate.js';
import { loadModel } from '../../../executors/models/loader.js';
import { toPcm16 } from '../../../lib/geri-protocol.js';
import { GERI_SESSION_OPTIONS } from '../../../executors/geri/worker/jobs.js';
import { waitUntil } from '../../../lib/wait.js';
import { tensor } from '../../../sidecar/tensor.js';
import { type Geri, type GeriNode, dataId, embeddings, sendEmbeddings, startGeriNode } from '../../helpers/geri.js';
import { modelDir } from '../../helpers/models.js';

let g: GeriNode;
let geri: Geri;

test.before(async () => {
  g = await startGeriNode({ modality: 'audio', maxBatchSize: 4 });
  geri = g.geri;
});

test.after.always(async () => {
  await g?.stop();
});

const memoryFreed = () => g.memoryFreed();

/** Every event of an SSE response. */
async function events(res: Response) {
  const out: { event: string; data: string }[] = [];
  for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) out.push(e);
  return out;
}

const pcmOf = (evs: { event: string; data: string }[]) =>
  Buffer.concat(evs.filter((e) => e.event === 'message').map((e) => Buffer.from(JSON.parse(e.data) as string, 'base64')));

test.serial('the audio stream\'s chunks concatenate to the direct generateAudio output as PCM16', async (t) => {
  const id = dataId();
  const emb = embeddings(40, 21);
  await sendEmbeddings(g.producer, id, emb, g.toGeri, 2);
  const res = await geri.post('/audio/generate', { embedding_data_id: id, chunk_size: 7, left_context_size: 3 });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const served = pcmOf(await events(res));

  const model = await loadModel(await modelDir('tiny-audio-gen'), { sessionOptions: GERI_SESSION_OPTIONS });
  t.teardown(() => model.close());
  const direct: Buffer[] = [];
  for await (const chunk of generateAudio(model, emb, { chunkSize: 7, leftContextSize: 3 })) direct.push(Buffer.from(toPcm16(chunk)));
  t.true(served.equals(Buffer.concat(direct)));
  t.is(served.byteLength, 40 * 240 * 2);
});

test.serial('audio from a stream of embeddings: each complete chunk window is voiced before the producer ends its stream, and the whole equals generateAudio', async (t) => {
  const id = dataId();
  const emb = embeddings(11, 5);
  const h = emb.shape[1];
  const sendRow = (i: number) => g.producer.send(tensor('f32', [1, h], emb.data.slice(i * h, (i + 1) * h)), id, g.toGeri, { stream: true, chunk: i });
  const reply = geri.post('/audio/generate', { embedding_data_id: id, chunk_size: 4, left_context_size: 2 }); // headers come with the first audio
  for (let i = 0; i < 8; i++) await sendRow(i);
  const res = await reply;
  const evs = sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const pcm: Buffer[] = [];
  const nextAudio = async () => {
    const e = await evs.next();
    t.false(e.done);
    t.is(e.value.event, 'message');
    pcm.push(Buffer.from(JSON.parse(e.value.data) as string, 'base64'));
  };
  // the stream is still open: two windows of 4 rows are complete, so their audio must come now
  await nextAudio();
  await nextAudio();
  for (let i = 8; i < 11; i++) await sendRow(i);
  await g.producer.closeStream(id, 11, g.toGeri);
  await nextAudio(); // the last 3 rows, after the end of the stream
  t.is((await evs.next()).value.event, 'done');

  const model = await loadModel(await modelDir('tiny-audio-gen'), { sessionOptions: GERI_SESSION_OPTIONS });
  t.teardown(() => model.close());
  const direct: Buffer[] = [];
  for await (const chunk of generateAudio(model, emb, { chunkSize: 4, leftContextSize: 2 })) direct.push(Buffer.from(toPcm16(chunk)));
  t.is(pcm.length, direct.length);
  t.true(Buffer.concat(pcm).equals(Buffer.concat(direct)));
  await t.notThrowsAsync(memoryFreed());
});

test.serial('one SSE event per chunk, then a done event counting them', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(20), g.toGeri);
  const evs = await events(await geri.post('/audio/generate', { embedding_data_id: id, chunk_size: 6 }));
  t.deepEqual(evs.map((e) => e.event), ['message', 'message', 'message', 'message', 'done']);
  t.deepEqual(JSON.parse(evs.at(-1)!.data), { chunks: 4 });
});

test.serial('chunk sizes left out (or null, as the reference sends them) use the model\'s defaults', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(120), g.toGeri);
  const evs = await events(await geri.post('/audio/generate', { embedding_data_id: id, chunk_size: null, left_context_size: null }));
  t.is(evs.filter((e) => e.event === 'message').length, 3); // default chunk_size 50
});

test.serial('the sidecar memory of the embeddings is freed after an audio request', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(30), g.toGeri, 3);
  await events(await geri.post('/audio/generate', { embedding_data_id: id }));
  await t.notThrowsAsync(memoryFreed());
});

test.serial('embeddings with another hidden size → 422 JSON error before any chunk, and their memory is freed', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(10, 1, 96), g.toGeri);
  const res = await geri.post('/audio/generate', { embedding_data_id: id });
  t.is(res.status, 422);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'GERI_HIDDEN_SIZE_MISMATCH');
  await t.notThrowsAsync(memoryFreed());
});

test.serial('a client that leaves mid-stream is counted cancelled, and nothing stays in the sidecar', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(3000, 2), g.toGeri, 4);
  const abort = new AbortController();
  const res = await geri.post('/audio/generate', { embedding_data_id: id, chunk_size: 1 }, { signal: abort.signal });
  const reader = res.body!.getReader();
  t.false((await reader.read()).done); // the first chunk is there
  abort.abort();
  await reader.cancel().catch(() => undefined);
  await waitUntil('the request counted as cancelled', async () => (await geri.info()).served.cancelled === 1, { timeoutMs: 15_000 });
  await t.notThrowsAsync(memoryFreed());
});

test.serial('an image request to an audio Geri → 400 GERI_WRONG_MODALITY', async (t) => {
  const res = await geri.post('/image/generate', { embedding_data_id: dataId(), height: 8, width: 8 }, { deadlineMs: 500 });
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'GERI_WRONG_MODALITY');
});
