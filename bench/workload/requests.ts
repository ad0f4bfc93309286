/**
 * What goes on the wire for each request: the synthetic RequestSpec turned into an OpenAI chat request (text
 * plus one image, audio or video part), or a ready request from a `--dataset` file. The same body serves both
 * targets: `--api chat` posts it to /v1/chat/completions, `--api invoke` sends it as the app's request_data.
 */
import { audioUrl, imageUrl, videoUrl } from './media.js';
import type { RequestKind, RequestSpec } from './mix.js';
import { WorkloadInputError } from './mix.js';

export interface PreparedRequest {
  index: number;
  kind: RequestKind | 'dataset';
  /** The chat request (`--api chat`) or the request_data (`--api invoke`). */
  body: Record<string, unknown>;
  /** Prompt length asked for (0 when unknown, e.g. a dataset line without messages). */
  inputTokens: number;
}

const WORDS = ['the', 'quick', 'model', 'serves', 'every', 'request', 'with', 'an', 'image', 'of', 'a', 'small', 'red', 'barn', 'under', 'blue', 'sky', 'and', 'audio', 'clips'];

/** About `chars` characters of deterministic words (the tiny models' tokenizer is byte-level: 1 char ≈ 1 token). */
export function promptText(chars: number, seed: number): string {
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    const w = WORDS[(seed + i * 7 + (i >> 3)) % WORDS.length]!;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ').slice(0, Math.max(1, chars));
}

/** data: URLs already made, by kind, size and seed (a run reuses MEDIA_VARIANTS of each). */
const mediaCache = new Map<string, string>();
const cached = (key: string, make: () => string) => {
  let url = mediaCache.get(key);
  if (url === undefined) {
    if (mediaCache.size > 1024) mediaCache.clear();
    mediaCache.set(key, (url = make()));
  }
  return url;
};

/** The chat request for a synthetic spec; `model` is the app name (chat) and harmless for invoke. */
export function chatRequestFor(spec: RequestSpec, model: string): PreparedRequest {
  const text = promptText(spec.inputTokens, spec.mediaSeed);
  let media: Record<string, unknown> | undefined;
  const { image, audioSeconds, video, mediaSeed: seed } = spec;
  if (image) media = { type: 'image_url', image_url: { url: cached(`i${image.width}x${image.height}:${seed}`, () => imageUrl(image.width, image.height, seed)) } };
  if (audioSeconds !== undefined) media = { type: 'audio_url', audio_url: { url: cached(`a${audioSeconds}:${seed}`, () => audioUrl(audioSeconds, seed)) } };
  if (video) media = { type: 'video_url', video_url: { url: cached(`v${video.frames}:${video.width}x${video.height}:${seed}`, () => videoUrl(video.frames, video.width, video.height, seed)) } };
  const content = media ? [{ type: 'text', text }, media] : text;
  return {
    index: spec.index,
    kind: spec.kind,
    inputTokens: spec.inputTokens,
    body: {
      model,
      messages: [{ role: 'user', content }],
      max_tokens: spec.outputTokens,
      ignore_eos: true, // exactly max_tokens tokens, as vLLM's benchmark asks, so TPOT compares across runs
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    },
  };
}

/**
 * The lines of a `--dataset` JSONL file: each a JSON object. For `--api chat` it is a chat request (its
 * `messages` required; `model` is replaced); for `--api invoke` it is the request_data, or `{request_data}`.
 * Blank lines are skipped; the first bad line is an error naming its number.
 */
export function parseDataset(text: string, api: 'chat' | 'invoke'): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new WorkloadInputError(`--dataset line ${i + 1}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new WorkloadInputError(`--dataset line ${i + 1}: expected a JSON object`);
    let obj = v as Record<string, unknown>;
    if (api === 'invoke' && 'request_data' in obj) {
      if (typeof obj.request_data !== 'object' || obj.request_data === null) throw new WorkloadInputError(`--dataset line ${i + 1}: request_data must be an object`);
      obj = obj.request_data as Record<string, unknown>;
    }
    if (api === 'chat' && (!Array.isArray(obj.messages) || obj.messages.length === 0)) {
      throw new WorkloadInputError(`--dataset line ${i + 1}: a chat request needs a non-empty 'messages' array`);
    }
    out.push(obj);
  }
  if (out.length === 0) throw new WorkloadInputError('--dataset: the file has no requests');
  return out;
}

/** Request `index` of a dataset run (lines are reused in order when the run is longer than the file). */
export function datasetRequest(lines: Array<Record<string, unknown>>, index: number, model: string, api: 'chat' | 'invoke'): PreparedRequest {
  const line = lines[index % lines.length]!;
  const body = api === 'chat' ? { ...line, model, stream: true, stream_options: { include_usage: true } } : line;
  return { index, kind: 'dataset', body, inputTokens: textChars(line.messages) };
}

/** Characters of text in chat messages (string contents and text parts). */
function textChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages as Array<{ content?: unknown }>) {
    if (typeof m?.content === 'string') n += m.content.length;
    else if (Array.isArray(m?.content)) for (const p of m.content as Array<{ text?: unknown }>) if (typeof p?.text === 'string') n += p.text.length;
  }
  return n;
}
