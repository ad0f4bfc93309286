/**
 * The Geri descriptors against real executors started from the descriptors' own launch specs: an image
 * invocation whose embeddings come from a real Eric (through the sidecar), and an audio invocation whose
 * re-wrapped chat chunks carry exactly the audio Geri generated.
 */
import test from 'ava';
import sharp from 'sharp';
import { audioGeriDescriptor, imageGeriDescriptor } from '../../../control/descriptors/geri.js';
import { ericDescriptor } from '../../../control/descriptors/eric.js';
import { DataForward } from '../../../functions/sdk/index.js';
import { EncoderTask } from '../../../functions/tasks/encoder.js';
import { AudioGeneratorTask, ImageGeneratorTask, imageGeneratorOutputSchema } from '../../../functions/tasks/generator.js';
import { chatChunkSchema } from '../../../lib/openai.js';
import { generateAudio } from '../../../executors/models/generate.js';
import { loadModel } from '../../../executors/models/loader.js';
import { toPcm16 } from '../../../lib/geri-protocol.js';
import { GERI_SESSION_OPTIONS } from '../../../executors/geri/worker/jobs.js';
import { TINY_A, dataUrl, startEric } from '../../helpers/eric.js';
import { dataId, embeddings, sendEmbeddings, startGeri } from '../../helpers/geri.js';
import { makeImage } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { startSidecars } from '../../helpers/sidecar.js';

const post = (url: string, req: { path: string; body: unknown }) =>
  fetch(`${url}${req.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req.body) });

test('an image invocation: Eric\'s embeddings of an image, forwarded to a Geri started from the descriptor, become a PNG of the requested size', async (t) => {
  const sc = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => sc.stop());
  const enc = new EncoderTask({ modality: 'image', modelIds: [TINY_A] });
  const gen = new ImageGeneratorTask({ modelId: 'cornserve/tiny-image-gen', maxBatchSize: 2 });
  const [eric, geri] = await Promise.all([
    startEric({ modality: 'image', launch: ericDescriptor.launch(enc), ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath }),
    startGeri({ modality: 'image', args: imageGeriDescriptor.launch(gen).args, sidecar: sc.nodeOf(1).socketPath, ranks: [1] }),
  ]);
  t.teardown(() => Promise.all([eric.stop(), geri.stop()]).then(() => undefined));

  // What the dispatcher does: the encoder's output forward is the generator's input, wired to Geri's rank.
  const encInput = { model_id: TINY_A, data_urls: [dataUrl('image/png', await makeImage(84, 56))] };
  const encOutput = enc.makeRecordOutput(encInput);
  encOutput.embeddings[0]!.dstSidecarRanks = [[1]];
  const genInput = gen.inputSchema.parse({ embeddings: encOutput.embeddings[0]!, height: 40, width: 56 });
  const [encRes, genRes] = await Promise.all([post(eric.url, ericDescriptor.request(enc, encInput, encOutput)), post(geri.url, imageGeriDescriptor.request(gen, genInput, { generated: '' }))]);
  t.is(encRes.status, 200);
  t.is(genRes.status, 200);
  const { output } = await imageGeriDescriptor.response(gen, gen.makeRecordOutput(), genRes);
  const png = Buffer.from(imageGeneratorOutputSchema.parse(output).generated, 'base64');
  const meta = await sharp(png).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 56, 40]);
});

test('an audio invocation: the descriptor\'s NDJSON chat chunks carry exactly the audio generateAudio makes', async (t) => {
  const sc = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => sc.stop());
  const gen = new AudioGeneratorTask({ modelId: 'cornserve/tiny-audio-gen' });
  const geri = await startGeri({ modality: 'audio', args: audioGeriDescriptor.launch(gen).args, sidecar: sc.nodeOf(1).socketPath, ranks: [1] });
  t.teardown(() => geri.stop());
  const id = dataId();
  const emb = embeddings(25, 9);
  await sendEmbeddings(await sc.client(0), id, emb, [[1]]);

  const input = gen.inputSchema.parse({ embeddings: new DataForward('tensor', id), chunk_size: 10 });
  const res = await post(geri.url, audioGeriDescriptor.request(gen, input, {}));
  t.is(res.status, 200);
  const { stream } = await audioGeriDescriptor.response(gen, {}, res);
  const pcm: Buffer[] = [];
  for await (const line of stream!) pcm.push(Buffer.from(chatChunkSchema.parse(JSON.parse(line)).choices[0]!.delta.audio!.data, 'base64'));
  t.is(pcm.length, 3);

  const model = await loadModel(await modelDir('tiny-audio-gen'), { sessionOptions: GERI_SESSION_OPTIONS });
  t.teardown(() => model.close());
  const direct: Buffer[] = [];
  for await (const c of generateAudio(model, emb, { chunkSize: 10 })) direct.push(Buffer.from(toPcm16(c)));
  t.true(Buffer.concat(pcm).equals(Buffer.concat(direct)));
});
