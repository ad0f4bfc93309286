/**
 * The chat template and prompt assembly. With the built-in tokenizer a conversation renders as
 *   <|bos|> (<|role|> content <|end|>)* <|assistant|>
 * where text content is its UTF-8 bytes and each image / audio / video part becomes N placeholder tokens
 * (N = rows of the embedding received for it). A Hugging Face folder renders its chat_template; a VLM's
 * template writes one placeholder token per part (`<|image_pad|>`), expanded here to N the same way. The prompt's input embeddings are the token embeddings with
 * the received rows written over the placeholder positions.
 */
import type { ChatMessage } from '../../lib/openai.js';
import { llmErrors } from './errors.js';
import { HfTokenizer } from './hf-tokenizer.js';
import type { LlmModel } from './model.js';
import type { TextTokenizer, Tokenizer } from './tokenizer.js';

export type MediaModality = 'image' | 'video' | 'audio';

/** A run of tokens, or one multimodal part (its embedding decides how many placeholder tokens it takes). */
export type Segment = { ids: number[] } | { media: MediaModality; url: string; part: number };

const PART_MODALITY: Record<string, MediaModality> = { image_url: 'image', video_url: 'video', audio_url: 'audio' };

/**
 * A chat as segments. Hugging Face tokenizers render the folder's chat_template; the built-in byte-level
 * tokenizer uses its fixed markers.
 */
export function renderChat(tok: TextTokenizer, messages: readonly ChatMessage[]): Segment[] {
  if (tok instanceof HfTokenizer) return renderHfChat(tok, messages);
  return renderBuiltinChat(tok as Tokenizer, messages);
}

/** The multimodal parts of a chat in order, with their modality and URL. */
function mediaParts(messages: readonly ChatMessage[]): { media: MediaModality; url: string }[] {
  return messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content).flatMap((p) => {
    if (p.type === 'text') return [];
    const url = p.type === 'image_url' ? p.image_url.url : p.type === 'video_url' ? p.video_url.url : p.audio_url.url;
    return [{ media: PART_MODALITY[p.type]!, url }];
  }));
}

/**
 * The rendered template's text cut at each placeholder token it wrote (a VLM's `<|image_pad|>`, one per
 * multimodal part, in message order): text runs → ids, each placeholder → that part's segment (buildPrompt
 * expands it to one token per embedding row, as the Qwen2-VL processor does).
 */
function renderHfChat(tok: HfTokenizer, messages: readonly ChatMessage[]): Segment[] {
  const text = tok.renderText(messages);
  const parts = mediaParts(messages);
  if (!parts.length) return [{ ids: tok.encode(text) }];
  const out: Segment[] = [];
  let rest = text;
  parts.forEach((p, part) => {
    const token = tok.placeholders[p.media as 'image']!.token;
    const at = rest.indexOf(token);
    if (at < 0) throw llmErrors.modelInvalid(`chat_template wrote no ${token} for multimodal part ${part} (${p.media})`);
    out.push({ ids: tok.encode(rest.slice(0, at)) }, { media: p.media, url: p.url, part });
    rest = rest.slice(at + token.length);
  });
  out.push({ ids: tok.encode(rest) });
  return out;
}

function renderBuiltinChat(tok: Tokenizer, messages: readonly ChatMessage[]): Segment[] {
  const chat = tok.spec.chat;
  const out: Segment[] = [];
  let ids: number[] = [tok.bos];
  let part = 0;
  messages.forEach((m, i) => {
    const marker = chat.roles[m.role];
    if (!marker) throw llmErrors.badRequest(`messages.${i}.role: ${m.role} is not supported`, `messages.${i}.role`);
    ids.push(tok.special(marker));
    const parts = typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : m.content;
    for (const p of parts) {
      if (p.type === 'text') {
        ids.push(...tok.encode(p.text));
        continue;
      }
      out.push({ ids });
      ids = [];
      const url = p.type === 'image_url' ? p.image_url.url : p.type === 'video_url' ? p.video_url.url : p.audio_url.url;
      out.push({ media: PART_MODALITY[p.type]!, url, part: part++ });
    }
    ids.push(tok.special(chat.end_of_turn));
  });
  ids.push(tok.special(chat.generation_prompt));
  out.push({ ids });
  return out;
}

function placeholderId(tok: TextTokenizer, media: MediaModality): number | undefined {
  if (tok instanceof HfTokenizer) return media === 'image' ? tok.placeholders.image?.id : undefined;
  const name = (tok as Tokenizer).spec.placeholders[media];
  return name === undefined ? undefined : (tok as Tokenizer).special(name);
}

/** A received multimodal embedding: rows × hidden, row-major. */
export interface MediaEmbedding {
  rows: number;
  data: Float32Array;
}

export interface Prompt {
  ids: number[];
  n: number;
  /** [n, hidden] */
  embeds: Float32Array;
  /** Where each multimodal part's rows went. */
  media: { modality: MediaModality; part: number; start: number; rows: number }[];
}

/** Token ids + input embeddings for rendered segments, with `media[k]` at multimodal part k's placeholders. */
export function buildPrompt(model: LlmModel, segments: readonly Segment[], media: readonly MediaEmbedding[] = []): Prompt {
  const tok = model.tokenizer;
  const h = model.config.hidden;
  const ids: number[] = [];
  const spans: Prompt['media'] = [];
  for (const s of segments) {
    if ('ids' in s) {
      ids.push(...s.ids);
      continue;
    }
    const e = media[s.part];
    if (!e) throw llmErrors.badRequest(`multimodal part ${s.part} has no embedding`, 'messages');
    const placeholder = placeholderId(tok, s.media);
    if (placeholder === undefined) throw llmErrors.multimodalUnsupported(`the model has no ${s.media} placeholder token`, 'messages');
    spans.push({ modality: s.media, part: s.part, start: ids.length, rows: e.rows });
    ids.push(...Array<number>(e.rows).fill(placeholder));
  }
  // A decoder that takes input_ids (Hugging Face decoder-only exports) embeds the tokens itself.
  const embeds = new Float32Array(model.takesIds ? 0 : ids.length * h);
  if (!model.takesIds) ids.forEach((id, i) => model.embedToken(id, embeds, i * h));
  for (const sp of spans) embeds.set(media[sp.part]!.data.subarray(0, sp.rows * h), sp.start * h);
  return { ids, n: ids.length, embeds, media: spans };
}
