/**
 * The one way results reach disk, for bench, simulate and the experiment.
 *
 * results.json is written as a stream: a run's per-request lists can exceed V8's largest string (~512 M
 * characters), so the file is never one string. The top levels are laid out one key / one element per line;
 * each element below that is one JSON.stringify (about 3× faster than a generic streaming stringifier measured
 * here on the same records). It goes to a temporary name first and is renamed, so a failed write never leaves a
 * truncated results.json.
 *
 * requests.jsonl holds one request record per line, appended as each request ends, so a run that dies or is
 * stopped keeps what it measured. Past its byte cap it stops writing lines and counts the rest (the note goes
 * into results.json).
 */
import { closeSync, createWriteStream, openSync, renameSync, writeSync } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';

/** Top-level nesting laid out one item per line; deeper values are one JSON.stringify each. */
const LAYOUT_DEPTH = 2;
const CHUNK_CHARS = 1 << 20;

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
const skipped = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

function* pieces(value: unknown, depth: number): Generator<string> {
  if (depth >= LAYOUT_DEPTH || !isContainer(value)) {
    yield JSON.stringify(value) ?? 'null';
    return;
  }
  const pad = '\n' + ' '.repeat(depth + 1);
  if (Array.isArray(value)) {
    if (value.length === 0) return void (yield '[]');
    yield '[';
    for (let i = 0; i < value.length; i++) {
      yield i ? `,${pad}` : pad;
      yield* pieces(skipped(value[i]) ? null : value[i], depth + 1);
    }
    yield `\n${' '.repeat(depth)}]`;
    return;
  }
  const entries = Object.entries(value).filter(([, v]) => !skipped(v));
  if (entries.length === 0) return void (yield '{}');
  yield '{';
  for (const [i, [k, v]] of entries.entries()) {
    yield `${i ? ',' : ''}${pad}${JSON.stringify(k)}: `;
    yield* pieces(v, depth + 1);
  }
  yield `\n${' '.repeat(depth)}}`;
}

/** Writes `value` as JSON to `file` without ever holding it as one string. */
export async function writeJsonFile(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.writing`;
  const out = createWriteStream(tmp);
  let chunk = '';
  try {
    for (const p of pieces(value, 0)) {
      chunk += p;
      if (chunk.length < CHUNK_CHARS) continue;
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
    out.end(`${chunk}\n`);
    await finished(out);
  } catch (e) {
    out.destroy();
    throw e;
  }
  renameSync(tmp, file);
}

/** What requests.jsonl holds, for results.json. */
export interface JsonlSummary {
  file: string;
  lines: number;
  /** Requests past the byte cap, counted but not written. */
  dropped: number;
  note?: string;
}

/** Default cap of requests.jsonl: past it the records are aggregated only (results.json says so). */
export const JSONL_MAX_BYTES = 1 << 30;

/** An append-only JSONL file written as lines arrive (synchronous writes of ~1 MiB: a run that dies keeps all but its last chunk). */
export class JsonlLog {
  #fd: number | undefined;
  #buffered = '';
  #bytes = 0;
  #lines = 0;
  #dropped = 0;

  constructor(readonly file: string, private readonly maxBytes = JSONL_MAX_BYTES) {
    this.#fd = openSync(file, 'w');
  }

  add(record: unknown): void {
    const line = `${JSON.stringify(record)}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.#fd === undefined || this.#bytes + bytes > this.maxBytes) {
      this.#dropped++;
      return;
    }
    this.#bytes += bytes;
    this.#lines++;
    this.#buffered += line;
    if (this.#buffered.length >= CHUNK_CHARS) this.flush();
  }

  flush(): void {
    if (this.#fd === undefined || !this.#buffered) return;
    writeSync(this.#fd, this.#buffered);
    this.#buffered = '';
  }

  /** Flushes and closes (again is a no-op); returns what the file holds. */
  close(): JsonlSummary {
    this.flush();
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    return {
      file: this.file,
      lines: this.#lines,
      dropped: this.#dropped,
      ...(this.#dropped ? { note: `requests.jsonl stopped at ${this.maxBytes} bytes: the last ${this.#dropped} requests are in the aggregates only` } : {}),
    };
  }
}
