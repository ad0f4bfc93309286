/**
 * How Geri answers. Generation routes keep the reference's response fields next to the project's error shape:
 *   image ok     200 {status: 0, generated: <base64 PNG>}
 *   error        4xx/5xx {status: 1, error_message, error: {code, message, details?}}
 *   audio ok     200 text/event-stream: `data: "<base64 PCM16>"` per chunk, then `event: done` + `data: {"chunks": n}`
 *   audio error  before the first chunk: the JSON error above; after it: `event: error` + `data: {error: {...}}`, end
 * The reference's audio stream has no end marker; `event: done` lets a client tell a finished stream from a
 * cut one (a reference client reading only `data:` lines of base64 strings skips it).
 */
import type { Response } from 'express';
import { toErrorBody } from '../../../lib/http.js';

export const STATUS_OK = 0;
export const STATUS_ERROR = 1;

/** Sends `err` as a JSON error (status from its code) with the reference's status/error_message fields. */
export function sendError(res: Response, err: unknown): string {
  const { status, body } = toErrorBody(err);
  if (!res.headersSent) res.status(status).json({ status: STATUS_ERROR, error_message: body.error.message, ...body });
  else res.end();
  return body.error.code;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/**
 * `{status: 0, generated: <base64 PNG>}`, written as one buffer: base64 needs no JSON escaping, so the body is
 * built around the base64 text directly (res.json would scan the string again, convert it, and hash it for an
 * ETag — a third of the router's time per small image).
 */
export function sendImage(res: Response, png: Uint8Array): void {
  const body = Buffer.from(`{"status":${STATUS_OK},"generated":"${b64(png)}"}`, 'latin1');
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.byteLength });
  res.end(body);
}

/** The audio route's event stream; headers go out with the first chunk, so an early error is still a 4xx/5xx. */
export class AudioEventStream {
  private chunks = 0;

  constructor(private readonly res: Response) {}

  get started(): boolean { return this.res.headersSent; }

  /** Headers only: they leave with the first event in one write (every start() is followed by one). */
  private start(): void {
    if (this.started) return;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  }

  /** One event per chunk; its JSON string is the base64 text in quotes (base64 needs no escaping). */
  chunk(pcm16: Uint8Array): void {
    this.start();
    this.chunks++;
    this.res.write(`data: "${b64(pcm16)}"\n\n`, 'latin1');
  }

  done(): void {
    this.start();
    this.res.end(`event: done\ndata: ${JSON.stringify({ chunks: this.chunks })}\n\n`);
  }

  /** Ends the stream with an error event; returns the error's code. */
  fail(err: unknown): string {
    const { body } = toErrorBody(err);
    if (!this.res.writableEnded) this.res.end(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
    return body.error.code;
  }
}
