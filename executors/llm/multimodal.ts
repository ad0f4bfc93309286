/**
 * Multimodal parts of a chat request and their embeddings. The dispatcher's LLM descriptor rewrites each part's
 * URL to `data:{modality}/uuid;data_id=<id>;url=<original>,`; the embedding `[tokens, hidden]` produced by the
 * encoder for that part is received from the sidecar under `<id>` (every chunk until the end), copied, and
 * marked done right away, so the sidecar's memory is held only while it is copied. A receive that outlives its
 * request (the client went away) still marks the data done when it arrives (bounded by the request deadline).
 */
import type { SidecarClient } from '../../sidecar/client/client.js';
import { ReceivedTensorError, receiveTensor, type ReceivedTensor } from '../common/receive-tensor.js';
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

/** Receives every chunk of one embedding (copied and marked done at once) as [rows, hidden]. */
async function receiveOne(sidecar: SidecarClient, ref: MediaRef, hidden: number, deadline: number): Promise<MediaEmbedding> {
  const what = `${ref.modality} embedding ${ref.dataId}`;
  let t: ReceivedTensor;
  try {
    t = await receiveTensor(sidecar, ref.dataId, { deadline });
  } catch (e) {
    if (e instanceof ReceivedTensorError) throw llmErrors.embeddingMismatch(`${what}: ${e.message}`, 'messages');
    throw llmErrors.sidecar(`receiving the ${what} failed: ${(e as Error).message}`, e);
  }
  if (t.cols !== hidden) throw llmErrors.embeddingMismatch(`${what} has ${t.cols} columns; this model's hidden size is ${hidden}`, 'messages');
  return { rows: t.rows, data: t.data };
}

/** Receives every part's embedding (concurrently); fails with the first failure. */
export function receiveEmbeddings(sidecar: SidecarClient, refs: readonly MediaRef[], hidden: number, deadline: number): Promise<MediaEmbedding[]> {
  const all = refs.map((r) => receiveOne(sidecar, r, hidden, deadline));
  for (const p of all) p.catch(() => undefined); // each one cleans up after itself
  return Promise.all(all);
}
