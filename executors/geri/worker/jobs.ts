/**
 * Running one batch on the generator (inside Geri's worker thread). Every item is handled on its own, so a bad
 * item (e.g. embeddings of the wrong hidden size) fails alone and the rest of the batch is unaffected.
 *
 * Image: the project's image generator takes one image per run, so a batch's items run one after another,
 * each through models/generate.ts's generateImage (prior, denoise steps, decoder, PNG): a served image equals
 * a direct generateImage on the same embeddings.
 * Audio: the requests of a batch advance in lock step, one chunk each per step (the reference's streaming
 * engine), through generateAudio; each chunk is sent as PCM16 as soon as it is made.
 */
import { ExecutorErrorCode, executorError, toWire } from '../../../lib/executor-errors.js';
import { type Item, type ItemResult, type Tensors, tensor } from '../../../lib/executor-protocol.js';
import { generateAudio, generateImage } from '../../models/generate.js';
import type { LoadedModel } from '../../models/loader.js';
import type { Embeddings } from '../../models/tensors.js';
import { type AudioParams, EMBEDDINGS, type ImageParams, PCM16, PNG, toPcm16 } from '../../../lib/geri-protocol.js';

/** Session options of Geri's worker (tests compare served output with a direct run using the same). */
export const GERI_SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const };

function embeddingsOf(it: Item): Embeddings {
  const t = it.tensors[EMBEDDINGS];
  if (!t || t.dtype !== 'float32' || t.shape.length !== 2) throw new TypeError(`item ${it.id} has no float32 [rows, hidden] '${EMBEDDINGS}' tensor`);
  return { data: t.data as Float32Array, shape: [t.shape[0]!, t.shape[1]!] };
}

const failed = (id: string, e: unknown): ItemResult => ({ id, ok: false, error: toWire(e) });
const cancelledResult = (id: string) => failed(id, executorError(ExecutorErrorCode.CANCELLED, 'the request was cancelled while generating'));

/** Whether an item's request was cancelled (checked before each image and between audio chunks). */
export type IsCancelled = (it: Item) => boolean;
const never: IsCancelled = () => false;

export async function runImageItems(model: LoadedModel, items: readonly Item[], isCancelled = never): Promise<ItemResult[]> {
  const out: ItemResult[] = [];
  for (const it of items) {
    if (isCancelled(it)) {
      out.push(cancelledResult(it.id));
      continue;
    }
    const p = it.meta as unknown as ImageParams;
    try {
      const { png } = await generateImage(model, embeddingsOf(it), {
        height: p.height, width: p.width, numInferenceSteps: p.numInferenceSteps, skipTokens: p.skipTokens,
      });
      out.push({ id: it.id, ok: true, meta: { bytes: png.byteLength }, tensors: { [PNG]: tensor('uint8', [png.byteLength], new Uint8Array(png.buffer, png.byteOffset, png.byteLength)) } });
    } catch (e) {
      out.push(failed(it.id, e));
    }
  }
  return out;
}

/** Sends one chunk of an item (awaited, so chunks leave in order and before the job's result). */
export type EmitChunk = (itemId: string, seq: number, tensors: Tensors) => Promise<void>;

export async function runAudioItems(model: LoadedModel, items: readonly Item[], emit: EmitChunk, isCancelled = never): Promise<ItemResult[]> {
  const results = new Map<string, ItemResult>();
  const active = items.flatMap((it) => {
    const p = it.meta as unknown as AudioParams;
    try {
      const gen = generateAudio(model, embeddingsOf(it), {
        ...(p.chunkSize !== undefined ? { chunkSize: p.chunkSize } : {}), ...(p.leftContextSize !== undefined ? { leftContextSize: p.leftContextSize } : {}),
        ...(p.startFrame !== undefined ? { startFrame: p.startFrame } : {}),
      });
      return [{ it, gen, seq: 0, samples: 0 }];
    } catch (e) {
      results.set(it.id, failed(it.id, e));
      return [];
    }
  });
  while (active.length) {
    for (const a of [...active]) {
      if (isCancelled(a.it)) {
        results.set(a.it.id, cancelledResult(a.it.id));
        active.splice(active.indexOf(a), 1);
        void a.gen.return(undefined);
        continue;
      }
      let step: IteratorResult<Float32Array>;
      try {
        step = await a.gen.next();
      } catch (e) {
        results.set(a.it.id, failed(a.it.id, e));
        active.splice(active.indexOf(a), 1);
        continue;
      }
      if (step.done) {
        results.set(a.it.id, { id: a.it.id, ok: true, meta: { chunks: a.seq, samples: a.samples } });
        active.splice(active.indexOf(a), 1);
        continue;
      }
      const pcm = toPcm16(step.value);
      a.samples += step.value.length;
      await emit(a.it.id, a.seq++, { [PCM16]: tensor('uint8', [pcm.byteLength], pcm) });
    }
  }
  return items.map((it) => results.get(it.id)!);
}
