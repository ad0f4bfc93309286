/** The EncoderTask descriptor against a real Eric started from the descriptor's own launch spec. */
import test from 'ava';
import { ericDescriptor } from '../../../control/descriptors/eric.js';
import { descriptorFor } from '../../../control/descriptors/registry.js';
import { EncoderTask } from '../../../functions/tasks/encoder.js';
import { TINY_A, TINY_B, dataUrl, startEric } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { startSidecars } from '../../helpers/sidecar.js';

const task = () => new EncoderTask({ modality: 'image', modelIds: [TINY_B, TINY_A], maxBatchSize: 4 });

test('EncoderTask resolves to the eric descriptor', (t) => {
  t.is(descriptorFor(task()), ericDescriptor);
});

test('the launch spec starts Eric for the first sorted model id, with the others as adapters', (t) => {
  const spec = ericDescriptor.launch(task());
  t.like(spec, { kind: 'eric', entry: 'executors/eric/main.ts', image: 'cornserve/eric', devicesPerExecutor: 1 });
  t.deepEqual(spec.args, ['--model-id', TINY_A, '--modality', 'image', '--max-batch-size', '4', '--adapter-model-ids', TINY_B]);
  t.is(ericDescriptor.executorName(task()), 'eric-image-tiny-vlm-a');
});

test('tensorParallel asks for that many colocated devices and as many Eric workers, under its own name', (t) => {
  const tp = new EncoderTask({ modality: 'image', modelIds: [TINY_A], tensorParallel: 2 });
  const spec = ericDescriptor.launch(tp);
  t.is(spec.devicesPerExecutor, 2);
  t.deepEqual(spec.args.slice(-2), ['--tp-size', '2']);
  t.is(ericDescriptor.executorName(tp), 'eric-image-tiny-vlm-a-tp2');
  t.is(tp.name, 'encoder-image-tiny-vlm-a-tp2');
});

test('a request without wired destination ranks is refused', (t) => {
  const input = { model_id: TINY_A, data_urls: ['data:image/png;base64,AA=='] };
  t.throws(() => ericDescriptor.request(task(), input, task().makeRecordOutput(input)), { message: /no destination sidecar ranks/ });
});

test('a status other than 0 is an error', async (t) => {
  const input = { model_id: TINY_A, data_urls: ['x'] };
  const res = new Response(JSON.stringify({ status: 1, error_message: 'engine error' }));
  await t.throwsAsync(ericDescriptor.response(task(), task().makeRecordOutput(input), res), { message: /status 1: engine error/ });
});

test('an invocation built by the descriptor is served by Eric and its embeddings reach the receivers', async (t) => {
  const sc = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => sc.stop());
  const enc = task();
  const eric = await startEric({ modality: 'image', launch: ericDescriptor.launch(enc), ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
  t.teardown(() => eric.stop());
  const imgs = await Promise.all([0, 1].map((s) => makeImage(56, 112, { seed: s })));
  const input = { model_id: TINY_B, data_urls: imgs.map((b) => dataUrl('image/png', b)) };
  const output = enc.makeRecordOutput(input);
  for (const f of output.embeddings) f.dstSidecarRanks = [[1]];
  const req = ericDescriptor.request(enc, input, output);
  const res = await fetch(`${eric.url}${req.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req.body) });
  t.is(res.status, 200);
  t.is((await ericDescriptor.response(enc, output, res)).output, output);
  const consumer = await sc.client(1);
  for (const f of output.embeddings) {
    t.deepEqual(((await consumer.recv(f.id, 0, { timeoutMs: 20_000 })) as { shape: number[] }).shape, [8, 192]);
    await consumer.markDone(f.id, 0);
  }
});
