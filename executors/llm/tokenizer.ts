/**
 * The byte-level tokenizer shipped in an LLM model folder (tokenizer.json): ids 0..255 are the bytes, the rest
 * are named special tokens. Any id sequence decodes to bytes; `Utf8Stream` turns those bytes into valid UTF-8
 * text incrementally (an incomplete multi-byte sequence is held back until its last byte arrives; invalid bytes
 * become U+FFFD), so every streamed chunk is valid UTF-8 and the chunks concatenate to the one-shot decode.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { llmErrors } from './errors.js';

const tokenizerFileSchema = z.object({
  type: z.literal('byte-level'),
  version: z.literal(1),
  vocab_size: z.number().int().min(257),
  special_tokens: z.record(z.string(), z.number().int().min(256)),
  bos_token: z.string(),
  eos_tokens: z.array(z.string()).min(1),
  pad_token: z.string(),
  placeholders: z.object({ image: z.string(), audio: z.string(), video: z.string() }).partial(),
  chat: z.object({
    roles: z.record(z.string(), z.string()),
    end_of_turn: z.string(),
    generation_prompt: z.string(),
  }),
});
export type TokenizerFile = z.infer<typeof tokenizerFileSchema>;

/** Turns a token stream into text as it grows: `push(id)` returns the text that became final. */
export interface TokenTextStream {
  push(id: number): string;
  /** Whatever is still held back, at the end of generation. */
  flush(): string;
}

/**
 * What the engine needs of a tokenizer, whichever kind: the built-in byte-level `Tokenizer` below (the
 * project's tiny models) or `HfTokenizer` (a Hugging Face tokenizer.json + chat_template, hf-tokenizer.ts).
 */
export interface TextTokenizer {
  readonly vocabSize: number;
  readonly eos: ReadonlySet<number>;
  encode(text: string): number[];
  decode(ids: Iterable<number>): string;
  stream(): TokenTextStream;
  isSpecial(id: number): boolean;
}

export class Tokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly bos: number;
  readonly pad: number;
  readonly eos: ReadonlySet<number>;
  private readonly names = new Map<number, string>();
  private readonly ids = new Map<string, number>();

  constructor(readonly spec: TokenizerFile) {
    this.vocabSize = spec.vocab_size;
    for (const [name, id] of Object.entries(spec.special_tokens)) {
      if (id >= spec.vocab_size) throw llmErrors.modelInvalid(`tokenizer: special token ${name} id ${id} ≥ vocab_size ${spec.vocab_size}`);
      this.names.set(id, name);
      this.ids.set(name, id);
    }
    this.bos = this.special(spec.bos_token);
    this.pad = this.special(spec.pad_token);
    this.eos = new Set(spec.eos_tokens.map((t) => this.special(t)));
  }

  static async load(dir: string, file = 'tokenizer.json'): Promise<Tokenizer> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(join(dir, file), 'utf8'));
    } catch (e) {
      throw llmErrors.modelInvalid(`cannot read ${join(dir, file)}: ${(e as Error).message}`);
    }
    const r = tokenizerFileSchema.safeParse(json);
    if (!r.success) throw llmErrors.modelInvalid(`${join(dir, file)}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    return new Tokenizer(r.data);
  }

  /** The id of a special token (throws when the tokenizer has none of that name). */
  special(name: string): number {
    const id = this.ids.get(name);
    if (id === undefined) throw llmErrors.modelInvalid(`tokenizer has no special token ${name}`);
    return id;
  }

  isSpecial(id: number): boolean {
    return id >= 256;
  }

  /** UTF-8 bytes of `text` as token ids (special-token names in text are plain text, never specials). */
  encode(text: string): number[] {
    return [...Buffer.from(text, 'utf8')];
  }

  /** Bytes of the byte tokens among `ids` (special tokens produce no text). */
  bytes(ids: Iterable<number>): Uint8Array {
    const out: number[] = [];
    for (const id of ids) if (id < 256) out.push(id);
    return Uint8Array.from(out);
  }

  decode(ids: Iterable<number>): string {
    return new TextDecoder().decode(this.bytes(ids));
  }

  stream(): TokenTextStream {
    return new Utf8Stream();
  }

  /** A readable form of one id (specials by name), for logs and tests. */
  tokenName(id: number): string {
    return this.names.get(id) ?? (id < 256 ? JSON.stringify(String.fromCharCode(id)) : `<${id}>`);
  }
}

/** Incremental UTF-8 decoding of a token stream: `push(id)` returns the text that became complete. */
export class Utf8Stream implements TokenTextStream {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private readonly one = new Uint8Array(1);

  push(id: number): string {
    if (id >= 256) return '';
    this.one[0] = id;
    return this.decoder.decode(this.one, { stream: true });
  }

  /** Whatever is still held back (an incomplete sequence at the end becomes U+FFFD). */
  flush(): string {
    return this.decoder.decode();
  }
}
