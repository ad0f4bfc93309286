/**
 * Multimodal parts of a chat request and their embeddings, from one of two sources:
 *  - encoder fission: the dispatcher's LLM descriptor rewrites each part's URL to
 *    `data:{modality}/uuid;data_id=<id>;url=<original>,`; the embedding `[tokens, hidden]` produced by Eric for
 *    that part is received from the sidecar under `<id>` (every chunk until the end), copied, and marked done
 *    right away, so the sidecar's memory is held only while it is copied. A receive that outlives its request
 *    (the client went away) still marks the data done when it arrives (bounded by the request deadline).
 *  - no fission (`--encoders`): a plain URL is loaded and encoded in this process (encoders.ts).
 */
import type { SidecarClient } from '../../sidecar/client/client.js';
import type { InProcessEncoders } from './encoders.js';
import { ReceivedTensorError, receiveTensor, type ReceivedTensor } from '../common/receive-tensor.js';
import { llmErrors } from './errors.js';
import type { MediaEmbedding, MediaModality, Segment } from './prompt.js';

const DATA_URL = /^data:(image|video|audio)\/uuid;data_id=([0-9a-f]+);url=(.*),$/s;

/** Where a part's embedding comes from: the sidecar (`dataId`, fission) or this process's encoder (`dataId` absent). */
export interface MediaRef {
  modality: MediaModality;
  dataId?: string;
  /** The media URL: the original one (informational) with a data id, else the one to load and encode. */
  url: string;
}

/** What this executor can take multimodal parts from. */
export interface MediaSources {
  /** Embeddings arrive through the sidecar (data-id URLs). */
  receive: boolean;
  /** Modalities encoded in this process (plain URLs). */
  encoders: readonly string[];
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
 * The multimodal parts of rendered segments with where each one's embedding comes from: a data-id URL from the
 * sidecar (when receiving), a plain URL from this process's encoder (when it has one for the modality).
 * Anything else is refused with what this executor accepts, as are modalities the model has no placeholder for.
 */
export function mediaRefs(segments: readonly Segment[], servedModalities: readonly string[], sources: MediaSources): MediaRef[] {
  const refs: MediaRef[] = [];
  for (const s of segments) {
    if (!('media' in s)) continue;
    const param = `messages (multimodal part ${s.part})`;
    if (!servedModalities.includes(s.media)) throw llmErrors.multimodalUnsupported(`this model does not take ${s.media} input (takes: ${servedModalities.join(', ') || 'text only'})`, param);
    const parsed = parseMediaUrl(s.url);
    if (parsed) {
      if (!sources.receive) {
        throw llmErrors.multimodalUnsupported('this executor was started without receive-embeddings: a data_id URL (an embedding from the sidecar) is not accepted', param);
      }
      if (parsed.modality !== s.media) throw llmErrors.badRequest(`a ${s.media} part carries a ${parsed.modality} data URL`, param);
      refs.push({ modality: parsed.modality, dataId: parsed.dataId, url: parsed.url });
      continue;
    }
    if (!sources.encoders.includes(s.media)) {
      throw llmErrors.multimodalUnsupported(
        sources.receive
          ? `${s.media} URLs must carry a data_id (data:${s.media}/uuid;data_id=<id>;url=<url>,): this executor has no ${s.media} encoder, it receives embeddings from the sidecar`
          : `this executor has no ${s.media} encoder and does not receive embeddings: start it with --encoders (encoder fission off) or --receive-embeddings`,
        param,
      );
    }
    refs.push({ modality: s.media, url: s.url });
  }
  return refs;
}

/** Receives every chunk of one embedding (copied and marked done at once) as [rows, hidden]. */
async function receiveOne(sidecar: SidecarClient, ref: MediaRef & { dataId: string }, hidden: number, deadline: number): Promise<MediaEmbedding> {
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

/** Encodes one part in this process, checking the embedding fits the LLM. */
async function encodeOne(encoders: InProcessEncoders, ref: MediaRef, hidden: number, signal?: AbortSignal): Promise<MediaEmbedding> {
  const e = await encoders.encode(ref.modality, ref.url, signal);
  if (e.data.length !== e.rows * hidden) throw llmErrors.embeddingMismatch(`the ${ref.modality} encoder made ${e.data.length / e.rows} columns; this model's hidden size is ${hidden}`, 'messages');
  return e;
}

export interface EmbeddingSources {
  sidecar?: SidecarClient;
  encoders?: InProcessEncoders;
}

/**
 * Every part's embedding: sidecar receives run concurrently; in-process encodes one after another (they share
 * this thread). Fails with the first failure; every receive still cleans up after itself.
 */
export async function resolveEmbeddings(src: EmbeddingSources, refs: readonly MediaRef[], hidden: number, deadline: number, signal?: AbortSignal): Promise<MediaEmbedding[]> {
  const received = refs.map((r) => (r.dataId === undefined ? undefined : receiveOne(src.sidecar!, r as MediaRef & { dataId: string }, hidden, deadline)));
  for (const p of received) p?.catch(() => undefined);
  const out: MediaEmbedding[] = [];
  for (const [i, r] of refs.entries()) out.push(await (received[i] ?? encodeOne(src.encoders!, r, hidden, signal)));
  return out;
}
