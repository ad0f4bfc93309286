/**
 * Geri's engine loop over a REAL worker pool (a worker thread running the tiny generators with onnxruntime).
 * The engine's answers go to a recorder instead of ZeroMQ, and requests are submitted directly, so which
 * requests end up in one batch is deterministic: the first request starts at once, the ones submitted while
 * it runs form the next batch.
 */
import test from 'ava';
import { type Item, type ItemResult, type Tensors, tensor } from '../../../../../lib/executor-protocol.js';
import type { WireError } from '../../../../../lib/executor-errors.js';
import { WorkerPool } from '../../../../../executors/common/worker-pool.js';
import { CancelFlags } from '../../../../../executors/geri/cancel-flags.js';
import { type EngineLink, GeriEngine } from '../../../../../executors/geri/engine/engine.js';
import { EMBEDDINGS, PCM16, PNG } from '../../../../../lib/geri-protocol.js';
import type { GeriWorkerData } from '../../../../../executors/geri/worker/worker.js';
import { logger } from '../../../../../lib/log.js';
import { embeddings } from '../../../../helpers/geri.js';
import { modelDir } from '../../../../helpers/models.js';

const log = logger('test');
const WORKER = new URL('../../../../../executors/geri/worker/worker.ts', import.meta.url);
const FAR = () => Date.now() + 60_000;

interface Response { requestId: string; items: ItemResult[]; error?: WireError; after: number }

/** Records the engine's answers in order; `response(id)` waits for one request's. */
class Recorder implements EngineLink {
  readonly log: Array<{ type: 'stream'; requestId: string; seq: number; tensors?: Tensors } | ({ type: 'response' } & Response)> = [];
  private readonly waiters = new Map<string, (r: Response) => void>();
  private readonly streamWaiters = new Map<string, () => void>();

  respond(requestId: string, items: readonly ItemResult[], error?: WireError): Promise<void> {
    const r: Response = { requestId, items: [...items], ...(error ? { error } : {}), after: this.log.length };
    this.log.push({ type: 'response', ...r });
    this.waiters.get(requestId)?.(r);
    return Promise.resolve();
  }

  stream(requestId: string, _itemId: string, seq: number, _meta?: Record<string, unknown>, tensors?: Tensors): Promise<void> {
    this.log.push({ type: 'stream', requestId, seq, ...(tensors ? { tensors } : {}) });
    this.streamWaiters.get(requestId)?.();
    return Promise.resolve();
  }

  /** Resolves once a chunk of the request was streamed. */
  firstChunk(requestId: string): Promise<void> {
    if (this.chunks(requestId) > 0) return Promise.resolve();
    return new Promise((resolve) => this.streamWaiters.set(requestId, resolve));
  }

  chunks(requestId: string): number {
    return this.log.filter((e) => e.type === 'stream' && e.requestId === requestId).length;
  }

  response(requestId: string): Promise<Response> {
    const done = this.log.find((e): e is { type: 'response' } & Response => e.type === 'response' && e.requestId === requestId);
    if (done) return Promise.resolve(done);
    return new Promise((resolve) => this.waiters.set(requestId, resolve));
  }

  answered(requestId: string): boolean {
    return this.log.some((e) => e.type === 'response' && e.requestId === requestId);
  }
}

const imageItem = (id: string, o: { rows?: number; hidden?: number; size?: number; steps?: number } = {}): Item => {
  const emb = embeddings(o.rows ?? 8, 3, o.hidden);
  return {
    id, meta: { kind: 'image', height: o.size ?? 32, width: o.size ?? 32, numInferenceSteps: o.steps ?? 2, skipTokens: 0 },
    tensors: { [EMBEDDINGS]: tensor('float32', emb.shape, emb.data) },
  };
};

const audioItem = (id: string, rows: number, chunkSize: number): Item => {
  const emb = embeddings(rows, 5);
  return { id, meta: { kind: 'audio', chunkSize, leftContextSize: 2 }, tensors: { [EMBEDDINGS]: tensor('float32', emb.shape, emb.data) } };
};

let imagePool: WorkerPool;
let audioPool: WorkerPool;
const audioFlags = CancelFlags.create(64);

test.before(async () => {
  const [imageDir, audioDir] = await Promise.all([modelDir('tiny-image-gen'), modelDir('tiny-audio-gen')]);
  [imagePool, audioPool] = await Promise.all([
    WorkerPool.start({ script: WORKER, size: 1, workerData: { modelDir: imageDir } satisfies GeriWorkerData, log }),
    WorkerPool.start({ script: WORKER, size: 1, workerData: { modelDir: audioDir, cancelFlags: audioFlags.sab } satisfies GeriWorkerData, log }),
  ]);
});

test.after.always(async () => {
  await Promise.all([imagePool?.close(), audioPool?.close()]);
});

function imageEngine(t: { teardown(fn: () => void): void }, maxBatchSize?: number) {
  const rec = new Recorder();
  const engine = new GeriEngine(imagePool, rec, { modality: 'image', log, ...(maxBatchSize ? { maxBatchSize } : {}) });
  t.teardown(() => engine.close());
  return { rec, engine };
}

test.serial('requests submitted while a batch runs form the next batch', async (t) => {
  const { rec, engine } = imageEngine(t, 4);
  for (let i = 0; i < 4; i++) engine.submit(`r${i}`, FAR(), [imageItem(`i${i}`)]);
  const rs = await Promise.all([0, 1, 2, 3].map((i) => rec.response(`r${i}`)));
  t.true(rs.every((r) => r.items[0]!.ok));
  t.deepEqual(rs.map((r) => r.items[0]!.meta!.batchSize), [1, 3, 3, 3]);
});

test.serial('a batch holds at most max_batch_size requests', async (t) => {
  const { rec, engine } = imageEngine(t, 2);
  for (let i = 0; i < 5; i++) engine.submit(`r${i}`, FAR(), [imageItem(`i${i}`)]);
  const rs = await Promise.all([0, 1, 2, 3, 4].map((i) => rec.response(`r${i}`)));
  t.deepEqual(rs.map((r) => r.items[0]!.meta!.batchSize), [1, 2, 2, 2, 2]);
});

test.serial('a bad item fails alone; the other requests of its batch get their images', async (t) => {
  const { rec, engine } = imageEngine(t, 4);
  engine.submit('first', FAR(), [imageItem('i0')]);
  engine.submit('good1', FAR(), [imageItem('i1')]);
  engine.submit('bad', FAR(), [imageItem('i2', { hidden: 100 })]);
  engine.submit('good2', FAR(), [imageItem('i3')]);
  const [g1, bad, g2] = await Promise.all([rec.response('good1'), rec.response('bad'), rec.response('good2')]);
  t.is(bad.items[0]!.meta!.batchSize, 3);
  t.false(bad.items[0]!.ok);
  t.like(bad.items[0]!.error, { code: 'MODEL_INPUT_INVALID', status: 400 });
  for (const g of [g1, g2]) {
    t.true(g.items[0]!.ok);
    t.deepEqual([...(g.items[0]!.tensors![PNG]!.data as Uint8Array).subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  }
});

test.serial('a request cancelled while queued is never answered; its batch-mates are', async (t) => {
  const { rec, engine } = imageEngine(t, 4);
  engine.submit('first', FAR(), [imageItem('i0')]);
  engine.submit('cancelled', FAR(), [imageItem('i1')]);
  engine.submit('kept', FAR(), [imageItem('i2')]);
  engine.handlers().cancel({ type: 'cancel', requestId: 'cancelled', reason: 'client went away' }, []);
  const kept = await rec.response('kept');
  t.true(kept.items[0]!.ok);
  t.is(kept.items[0]!.meta!.batchSize, 1);
  t.false(rec.answered('cancelled'));
});

test.serial('a request whose deadline passed while queued is answered EXECUTOR_DEADLINE_EXCEEDED without running', async (t) => {
  const { rec, engine } = imageEngine(t, 4);
  engine.submit('first', FAR(), [imageItem('i0')]);
  engine.submit('late', Date.now() - 1, [imageItem('i1')]);
  const late = await rec.response('late');
  t.is(late.error?.code, 'EXECUTOR_DEADLINE_EXCEEDED');
  t.deepEqual(late.items, []);
});

test.serial('an item whose meta is not Geri\'s is refused with EXECUTOR_PROTOCOL', async (t) => {
  const { rec, engine } = imageEngine(t);
  engine.submit('odd', FAR(), [{ id: 'x', meta: { kind: 'image', height: 'tall' }, tensors: {} }]);
  t.is((await rec.response('odd')).error?.code, 'EXECUTOR_PROTOCOL');
});

test.serial('an image engine refuses audio items', async (t) => {
  const { rec, engine } = imageEngine(t);
  engine.submit('a', FAR(), [audioItem('x', 4, 2)]);
  t.regex((await rec.response('a')).error?.message ?? '', /generates image, not audio/);
});

test.serial('audio chunks are streamed in order, all before the response', async (t) => {
  const rec = new Recorder();
  const engine = new GeriEngine(audioPool, rec, { modality: 'audio', log, maxBatchSize: 2 });
  t.teardown(() => engine.close());
  engine.submit('a', FAR(), [audioItem('x', 20, 6)]);
  const r = await rec.response('a');
  t.true(r.items[0]!.ok);
  const streamed = rec.log.slice(0, r.after).filter((e) => e.type === 'stream' && e.requestId === 'a');
  t.deepEqual(streamed.map((e) => (e as { seq: number }).seq), [0, 1, 2, 3]);
  t.is(r.items[0]!.meta!.chunks, 4);
  const bytes = streamed.reduce((n, e) => n + (e as { tensors: Tensors }).tensors[PCM16]!.data.byteLength, 0);
  t.is(bytes, 20 * 240 * 2); // 240 samples per frame, 2 bytes each
});

test.serial('audio requests in one batch advance in lock step, each stream complete', async (t) => {
  const rec = new Recorder();
  const engine = new GeriEngine(audioPool, rec, { modality: 'audio', log, maxBatchSize: 2 });
  t.teardown(() => engine.close());
  engine.submit('first', FAR(), [audioItem('x0', 4, 4)]);
  engine.submit('long', FAR(), [audioItem('x1', 12, 4)]);
  engine.submit('short', FAR(), [audioItem('x2', 4, 4)]);
  await Promise.all([rec.response('long'), rec.response('short')]);
  const order = rec.log.filter((e) => e.type === 'stream' && e.requestId !== 'first').map((e) => `${e.requestId}:${(e as { seq: number }).seq}`);
  t.deepEqual(order, ['long:0', 'short:0', 'long:1', 'long:2']);
});

test.serial('a running audio request that is cancelled stops generating: no response, and the next request runs', async (t) => {
  const rec = new Recorder();
  const engine = new GeriEngine(audioPool, rec, { modality: 'audio', log, maxBatchSize: 1, cancelFlags: audioFlags });
  t.teardown(() => engine.close());
  const frames = 20_000; // one chunk per frame: far longer than the test if it ran to the end
  engine.submit('long', FAR(), [audioItem('x0', frames, 1)]);
  await rec.firstChunk('long');
  engine.handlers().cancel({ type: 'cancel', requestId: 'long', reason: 'client went away' }, []);
  engine.submit('next', FAR(), [audioItem('x1', 4, 4)]);
  t.true((await rec.response('next')).items[0]!.ok);
  t.false(rec.answered('long')); // and 'next' ran: the worker left 'long' (else it would still be generating)
});
