/**
 * Multimodal parts of a chat request and their embeddings. The dispatcher's LLM descriptor rewrites each part's
 * URL to `data:{modality}/uuid;data_id=<id>;url=<original>,`; the embedding `[tokens, hidden]` produced by the
 * encoder for that part is received from the sidecar under `<id>` (every chunk until the end), copied, and
 * marked done right away, so the sidecar's memory is held only while it is copied. A receive that outlives its
 * request (the client went away) still marks the data done when it arrives (bounded by the request deadline).
 */
import type { SidecarClient } from '../../sidecar/client/client.js';
import { isTensor, type Tensor } from '../../sidecar/tensor.js';
import { llmErrors } from './errors.js';
import type { MediaEmbedding, MediaModality, Segment } from './prompt.js';

const DATA_URL = /^data:(image|video|audio)\/uuid;data_id=([0-9a-f]+);url=(.*),$/s;

export interface MediaRef {
  modality: MediaModality;
  dataId: string;
  /** The original media URL (informational: the encoder already read it). */
  url: string;
}

/** The data id form of a multimodal URL, or undefined for a plain URL. */
export function parseMediaUrl(url: string): { modality: MediaModality; dataId: string; url: string } | undefined {
  const m = DATA_URL.exec(url);
  return m ? { modality: m[1] as MediaModality, dataId: m[2]!, url: m[3]! } : undefined;
}

/** The URL the LLM descriptor sends for a part whose embedding travels under `dataId`. */
export function mediaUrl(modality: MediaModality, dataId: string, url: string): string {
  return `data:${modality}/uuid;data_id=${dataId};url=${url},`;
}

/**
 * The multimodal parts of rendered segments as sidecar references. Plain URLs are refused (no encoder runs
 * inside this executor), as are modalities the model has no placeholder for.
 */
export function mediaRefs(segments: readonly Segment[], servedModalities: readonly string[], canReceive: boolean): MediaRef[] {
  const refs: MediaRef[] = [];
  for (const s of segments) {
    if (!('media' in s)) continue;
    const param = `messages (multimodal part ${s.part})`;
    if (!servedModalities.includes(s.media)) throw llmErrors.multimodalUnsupported(`this model does not take ${s.media} input (takes: ${servedModalities.join(', ') || 'text only'})`, param);
    if (!canReceive) throw llmErrors.multimodalUnsupported('this executor was started without receive-embeddings and has no encoder: multimodal parts are not accepted', param);
    const parsed = parseMediaUrl(s.url);
    if (!parsed) {
      throw llmErrors.multimodalUnsupported(
        `${s.media} URLs must carry a data_id (data:${s.media}/uuid;data_id=<id>;url=<url>,): this executor has no encoder, it receives embeddings from the sidecar`,
        param,
      );
    }
    if (parsed.modality !== s.media) throw llmErrors.badRequest(`a ${s.media} part carries a ${parsed.modality} data URL`, param);
    refs.push({ modality: parsed.modality, dataId: parsed.dataId, url: parsed.url });
  }
  return refs;
}

/** A received tensor as `[rows, hidden]` float32 (leading 1-dims dropped), or an EMBEDDING_MISMATCH. */
function rowsOf(t: unknown, hidden: number, what: string): Tensor {
  if (!isTensor(t) || t.dtype !== 'f32') throw llmErrors.embeddingMismatch(`${what}: expected a float32 tensor from the sidecar`, 'messages');
  const shape = t.shape.filter((d, i) => !(d === 1 && i < t.shape.length - 2));
  if (shape.length !== 2 || shape[1] !== hidden) {
    throw llmErrors.embeddingMismatch(`${what}: embedding shape [${t.shape.join(', ')}] does not fit this model (expected [tokens, ${hidden}])`, 'messages');
  }
  return { ...t, shape };
}

/** Receives every chunk of one embedding, copies it, marks each chunk done. */
async function receiveOne(sidecar: SidecarClient, ref: MediaRef, hidden: number, deadline: number): Promise<MediaEmbedding> {
  const parts: Float32Array[] = [];
  for (let chunk = 0; ; chunk++) {
    let value: unknown;
    try {
      value = await sidecar.recv(ref.dataId, chunk, { deadline });
    } catch (e) {
      throw llmErrors.sidecar(`receiving the ${ref.modality} embedding ${ref.dataId} (chunk ${chunk}) failed: ${(e as Error).message}`, e);
    }
    if (value === null) break;
    try {
      parts.push(Float32Array.from(rowsOf(value, hidden, `${ref.modality} embedding ${ref.dataId}`).data as Float32Array));
    } finally {
      await sidecar.markDone(ref.dataId, chunk, { deadline, group: true }).catch(() => undefined);
    }
  }
  const rows = parts.reduce((a, p) => a + p.length, 0) / hidden;
  if (rows === 0) throw llmErrors.embeddingMismatch(`${ref.modality} embedding ${ref.dataId} has no rows`, 'messages');
  const data = new Float32Array(rows * hidden);
  let off = 0;
  for (const p of parts) {
    data.set(p, off);
    off += p.length;
  }
  return { rows, data };
}

/** Receives every part's embedding (concurrently); fails with the first failure. */
export function receiveEmbeddings(sidecar: SidecarClient, refs: readonly MediaRef[], hidden: number, deadline: number): Promise<MediaEmbedding[]> {
  const all = refs.map((r) => receiveOne(sidecar, r, hidden, deadline));
  for (const p of all) p.catch(() => undefined); // each one cleans up after itself
  return Promise.all(all);
}
