/**
 * Stream<T>: an async iterable over NDJSON lines, each parsed and validated by a zod schema.
 *
 * A Stream is consumed once. `transform(fn)` moves the underlying lines into a new Stream (the old one
 * can no longer be iterated or transformed again). Transforms chain: the returned stream may itself be
 * transformed, and each function applies in order. (The reference rejects any second transform; chaining lets
 * a task return a transformed stream that an app transforms further, without unwrapping it. README, departures.)
 * In record mode a streaming task returns a placeholder Stream with no source; the real one arrives on replay.
 */
import { z } from 'zod';
import { StreamError, ValidationError, formatIssues } from './errors.js';

type StreamState = 'fresh' | 'consuming' | 'consumed' | 'moved';

export class Stream<T> implements AsyncIterable<T> {
  #lines: AsyncIterable<string> | undefined;
  #state: StreamState = 'fresh';
  #map: ((raw: unknown) => T) | undefined;

  constructor(
    readonly chunkSchema: z.ZodType<T>,
    lines?: AsyncIterable<string>,
  ) {
    this.#lines = lines;
  }

  /** The record-time stand-in for a stream that does not exist yet. */
  static placeholder<T>(chunkSchema: z.ZodType<T>): Stream<T> {
    return new Stream(chunkSchema);
  }

  get isPlaceholder(): boolean {
    return this.#lines === undefined;
  }

  #take(): AsyncIterable<string> {
    if (this.#state === 'moved') throw new StreamError('this stream was transformed; iterate the stream transform() returned');
    if (this.#state !== 'fresh') throw new StreamError('a stream can be iterated only once');
    if (!this.#lines) throw new StreamError('this stream is a record-time placeholder and has no data (was it used during record?)');
    this.#state = 'consuming';
    return this.#lines;
  }

  /** The raw, trimmed, non-empty lines (for proxying a stream without parsing it). */
  async *rawLines(): AsyncGenerator<string> {
    const lines = this.#take();
    try {
      for await (const line of lines) {
        const t = line.trim();
        if (t) yield t;
      }
    } finally {
      this.#state = 'consumed';
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const line of this.rawLines()) {
      yield this.#parse(line);
    }
  }

  #parse(line: string): T {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      throw new ValidationError('stream chunk', [{ path: '(root)', message: `not JSON: ${line.slice(0, 80)}` }]);
    }
    return this.#convert(raw);
  }

  /** A parsed JSON line -> a chunk: validated, and passed through the transform chain when this stream came from transform(). */
  #convert(raw: unknown): T {
    if (this.#map) return this.#map(raw);
    const r = this.chunkSchema.safeParse(raw);
    if (!r.success) throw new ValidationError('stream chunk', formatIssues(r.error.issues));
    return r.data;
  }

  /**
   * A new stream whose chunks are `fn(chunk)`. Moves the data: this stream cannot be iterated afterwards.
   * `schema`, when given, validates the transformed chunks.
   */
  transform<R>(fn: (chunk: T) => R, schema?: z.ZodType<R>): Stream<R> {
    if (this.#state === 'moved') throw new StreamError('a stream can be transformed only once: transform the stream that transform() returned (transforms chain)');
    if (this.#state !== 'fresh') throw new StreamError('cannot transform a stream that is being or has been iterated');
    const source = this.#lines;
    this.#state = 'moved';
    this.#lines = undefined;
    const outSchema = (schema ?? z.unknown()) as z.ZodType<R>;
    const out = new Stream<R>(outSchema, source);
    // Bound now: a transformed stream can itself be transformed, and its chunks must still go through this one's chain.
    const convertIn = this.#convert.bind(this);
    out.#map = (raw) => {
      const v = fn(convertIn(raw));
      if (!schema) return v;
      const r = schema.safeParse(v);
      if (!r.success) throw new ValidationError('transformed stream chunk', formatIssues(r.error.issues));
      return r.data;
    };
    return out;
  }

  /** Streams serialize as `{}` in task graphs (the reference does the same): the data travels separately. */
  toJSON(): Record<string, never> {
    return {};
  }
}

const STREAM_CHUNK = new WeakMap<z.ZodType, z.ZodType>();

/** The output schema of a streaming task: a Stream of chunks validated by `chunk`. */
export function streamOf<T>(chunk: z.ZodType<T>): z.ZodType<Stream<T>> {
  const schema = z.custom<Stream<T>>((v) => v instanceof Stream, 'must be a Stream');
  STREAM_CHUNK.set(schema, chunk);
  return schema;
}

/** The chunk schema when `schema` was made by streamOf(), else undefined. */
export function streamChunkSchema(schema: z.ZodType): z.ZodType | undefined {
  return STREAM_CHUNK.get(schema);
}

/** Splits a byte or text stream into lines (NDJSON framing), handling chunks that split lines or UTF-8 characters. */
export async function* ndjsonLines(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const part of source) {
    buf += typeof part === 'string' ? part : decoder.decode(part, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield line;
    }
  }
  buf += decoder.decode();
  if (buf.trim()) yield buf.trim();
}

/** A Stream over an in-memory list of chunks (tests, and apps that build their own streams). */
export function streamFrom<T>(schema: z.ZodType<T>, chunks: Iterable<T> | AsyncIterable<T>): Stream<T> {
  async function* lines() {
    for await (const c of chunks as AsyncIterable<T>) yield JSON.stringify(c);
  }
  return new Stream(schema, lines());
}

/**
 * The chunks of several streams in the order they arrive (not one stream after another). It ends when every
 * stream has ended; an error in one ends it with that error. Leaving early (break, return, an error) closes
 * every stream still open, so their executors stop.
 */
export async function* mergeStreams<T>(streams: readonly AsyncIterable<T>[]): AsyncGenerator<T> {
  const its = streams.map((s) => s[Symbol.asyncIterator]());
  const next = (i: number) => its[i]!.next().then((r) => ({ i, r }));
  const pending = new Map(its.map((_, i) => [i, next(i)]));
  try {
    while (pending.size) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pending.set(i, next(i));
      yield r.value;
    }
  } finally {
    for (const p of pending.values()) p.catch(() => undefined);
    await Promise.allSettled([...pending.keys()].map((i) => its[i]!.return?.()));
  }
}
