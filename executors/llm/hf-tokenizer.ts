/**
 * A Hugging Face tokenizer folder: `tokenizer.json` through @huggingface/tokenizers, `chat_template` from
 * `tokenizer_config.json` through @huggingface/jinja, EOS ids from `generation_config.json` (int or list).
 * Chats render as transformers' `apply_chat_template(messages, add_generation_prompt=True, tokenize=True)`:
 * the template gets `messages`, `add_generation_prompt`, `bos_token`, `eos_token` (and the other special
 * tokens by name), and the text is encoded without adding special tokens (the template wrote them).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizerImpl } from '@huggingface/tokenizers';
import type { ChatMessage } from '../../lib/openai.js';
import { eosIds, readOptionalJson } from '../models/hf-folder.js';
import { llmErrors } from './errors.js';
import type { TextTokenizer, TokenTextStream } from './tokenizer.js';

/**
 * The part of @huggingface/tokenizers this file uses, typed here: under NodeNext its own types resolve to
 * `any` (its .d.ts files re-export through extensionless paths, hidden by skipLibCheck), which would let any
 * misuse through.
 */
interface HfTokenizerApi {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  token_to_id(token: string): number | undefined;
  get_added_tokens_decoder(): Map<number, { content: string; special?: boolean }>;
}

/** A special token in tokenizer_config.json: a string, `{content}` (older exports) or null. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

/**
 * Incremental decoding over a sliding window (as vLLM's and TGI's detokenizers do): each token decodes only
 * the ids since the last piece went out plus the piece before it as context (`prefix..read` then `prefix..`),
 * and emits the difference — not the whole sequence again per token, which made a long answer's decoding
 * quadratic. The context keeps decoders that treat a sequence's start specially (a leading space dropped)
 * exact; pieces concatenate to the one-shot decode. A trailing U+FFFD (an incomplete UTF-8 sequence split
 * across tokens) is held back until the next token completes it.
 */
class HfTextStream implements TokenTextStream {
  private readonly ids: number[] = [];
  /** ids[prefix, read) is the last piece emitted (decoded again as context); ids from `read` on are not out yet. */
  private prefix = 0;
  private read = 0;
  constructor(private readonly tok: HfTokenizer) {}

  push(id: number): string {
    this.ids.push(id);
    return this.next(false);
  }

  flush(): string {
    return this.next(true);
  }

  private next(final: boolean): string {
    const before = this.tok.decode(this.ids.slice(this.prefix, this.read));
    const now = this.tok.decode(this.ids.slice(this.prefix));
    // Byte-level decoding is prefix-stable; if a decoder ever rewrote earlier text, emit only what is new.
    if (now.length <= before.length || (!final && now.endsWith('\uFFFD')) || !now.startsWith(before)) return '';
    this.prefix = this.read;
    this.read = this.ids.length;
    return now.slice(before.length);
  }
}

/** A multimodal placeholder token (Qwen2-VL `<|image_pad|>`): config.json's `image_token_id`. */
export interface Placeholder { token: string; id: number }
export type PlaceholderModality = 'image';
/** Images only for now: a split VLM's vision_encoder is served for images (hf-manifest.ts), not yet for videos. */
const PLACEHOLDER_CONFIG: Record<PlaceholderModality, string> = { image: 'image_token_id' };

export class HfTokenizer implements TextTokenizer {
  readonly eos: ReadonlySet<number>;
  private readonly specialIds: ReadonlySet<number>;

  private constructor(
    private readonly impl: HfTokenizerApi,
    private readonly template: Template | undefined,
    private readonly specials: Record<string, string | undefined>,
    eos: number[],
    readonly vocabSize: number,
    /** Placeholder tokens by modality (a VLM's); the template writes one per part, the prompt expands it. */
    readonly placeholders: Readonly<Partial<Record<PlaceholderModality, Placeholder>>> = {},
  ) {
    this.eos = new Set(eos);
    this.specialIds = new Set([...impl.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));
  }

  /**
   * Reads tokenizer.json, tokenizer_config.json (chat_template, special tokens), generation_config.json and
   * config.json (EOS ids) from `dir`.
   */
  static async load(dir: string): Promise<HfTokenizer> {
    let tokenizerJson: unknown;
    try {
      tokenizerJson = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8'));
    } catch (e) {
      throw llmErrors.modelInvalid(`cannot read ${join(dir, 'tokenizer.json')}: ${(e as Error).message}`);
    }
    const cfg = (await readOptionalJson(join(dir, 'tokenizer_config.json'))) ?? {};
    const generation = await readOptionalJson(join(dir, 'generation_config.json'));
    const config = (await readOptionalJson(join(dir, 'config.json'))) ?? {};
    let impl: HfTokenizerApi;
    try {
      impl = new HfTokenizerImpl(tokenizerJson as object, cfg) as HfTokenizerApi;
    } catch (e) {
      throw llmErrors.modelInvalid(`${join(dir, 'tokenizer.json')}: ${(e as Error).message}`);
    }
    const raw = cfg.chat_template;
    // A list of named templates (newer exports): the one named "default".
    const source = typeof raw === 'string' ? raw
      : Array.isArray(raw) ? (raw as { name?: string; template?: string }[]).find((t) => t.name === 'default')?.template
        : undefined;
    let template: Template | undefined;
    if (source) {
      try {
        template = new Template(source);
      } catch (e) {
        throw llmErrors.modelInvalid(`${join(dir, 'tokenizer_config.json')}: chat_template does not parse: ${(e as Error).message}`);
      }
    }
    const specials: Record<string, string | undefined> = {};
    for (const k of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) specials[k] = tokenText(cfg[k]);
    let eos = eosIds(config, generation);
    if (!eos.length && specials.eos_token) {
      const id = impl.token_to_id(specials.eos_token);
      if (id !== undefined) eos = [id];
    }
    if (!eos.length) throw llmErrors.modelInvalid(`${dir}: no EOS id (generation_config.json / config.json eos_token_id, tokenizer_config.json eos_token)`);
    const vocab = typeof config.vocab_size === 'number' ? config.vocab_size : Math.max(...impl.get_added_tokens_decoder().keys()) + 1;
    const added = impl.get_added_tokens_decoder();
    const placeholders: Partial<Record<PlaceholderModality, Placeholder>> = {};
    for (const [m, key] of Object.entries(PLACEHOLDER_CONFIG) as [PlaceholderModality, string][]) {
      const id = config[key];
      if (typeof id !== 'number') continue;
      const token = added.get(id)?.content;
      if (!token) throw llmErrors.modelInvalid(`${dir}: config.json ${key} ${id} is not an added token of tokenizer.json`);
      placeholders[m] = { token, id };
    }
    return new HfTokenizer(impl, template, specials, eos, vocab, placeholders);
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /** Text as ids; special tokens written in the text ARE specials (as transformers encodes a rendered chat). */
  encode(text: string): number[] {
    return this.impl.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: Iterable<number>): string {
    const list = [...ids];
    return list.length ? this.impl.decode(list, { skip_special_tokens: true }) : ''; // decode([]) throws (§9.1)
  }

  stream(): TokenTextStream {
    return new HfTextStream(this);
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** The id of a token by its text (e.g. a placeholder such as `<|image_pad|>`). */
  tokenId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }

  /**
   * The chat as text, exactly as the template renders it with `add_generation_prompt`. Text-only content is
   * one string; content with media parts is passed as transformers passes it (`{type: 'text', text}`,
   * `{type: 'image'}`), so a VLM template writes its placeholder (one per part) where the part was.
   */
  renderText(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    if (!this.template) throw llmErrors.badRequest('this model\'s tokenizer_config.json has no chat_template', 'messages');
    const msgs = messages.map((m, i) => {
      if (typeof m.content === 'string') return { role: m.role, content: m.content };
      const media = m.content.filter((p) => p.type !== 'text');
      if (!media.length) return { role: m.role, content: m.content.map((p) => (p.type === 'text' ? p.text : '')).join('') };
      const content = m.content.map((p) => {
        if (p.type === 'text') return { type: 'text', text: p.text };
        const modality = p.type.replace(/_url$/, '');
        if (!(modality in this.placeholders)) {
          const has = Object.keys(this.placeholders);
          throw llmErrors.multimodalUnsupported(`messages.${i}.content: this model takes ${has.length ? `text and ${has.join(', ')}` : 'text only'} (${p.type} given)`, `messages.${i}.content`);
        }
        return { type: modality };
      });
      return { role: m.role, content };
    });
    try {
      return this.template.render({ messages: msgs, add_generation_prompt: addGenerationPrompt, ...this.specials });
    } catch (e) {
      throw llmErrors.badRequest(`chat_template: ${(e as Error).message}`, 'messages');
    }
  }
}
