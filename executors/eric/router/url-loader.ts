/**
 * Loads an item's URL into bytes, bounded in size and time (DESIGN §6, security):
 *   - `data:<mime>;base64,<data>` — base64 only (as the reference); a video may be a comma-separated list of
 *     base64 frames (`data:video/jpeg;base64,<f0>,<f1>,...`);
 *   - `http(s)://` — through the shared fetch guard (lib/fetch-guard.ts): no loopback, private, link-local,
 *     metadata… address unless `allowPrivate` opens it, checked at connect time after DNS and on every redirect
 *     hop (at most 3); optional host allowlist; size limit (Content-Length and streamed bytes), time limit;
 *   - `file:` — only with allowFile.
 * Every failure is an EricError naming the URL (a 4xx for that item).
 */
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Response as UndiciResponse } from 'undici';
import { FetchGuard, TooManyRedirectsError, UrlNotAllowedError, fetchGuard } from '../../../lib/fetch-guard.js';
import { EricError, ericError } from '../errors.js';

export interface UrlLoaderOptions {
  maxBytes: number;
  timeoutMs: number;
  allowFile: boolean;
  /** Host names allowed for http(s); `*.example.com` matches sub-domains. Empty or undefined: any host. */
  allowHosts?: readonly string[];
  /** CIDRs, addresses or host names that may be private (loopback, RFC 1918, …). Empty or undefined: none. */
  allowPrivate?: readonly string[];
  /** The guard to fetch through (tests inject one with their own resolver). @default fetchGuard(allowHosts, allowPrivate) */
  guard?: FetchGuard;
}

export interface Loaded {
  /** The media type when the URL says it (data: URL or Content-Type). */
  mime?: string;
  /** One part for an image or audio file; one per frame for a frame-list video. */
  parts: Uint8Array[];
}

/** A short form of the URL for messages (data: URLs can be megabytes long). */
export const describeUrl = (url: string) => (url.startsWith('data:') ? `${url.slice(0, Math.min(url.indexOf(',') + 1 || 40, 40))}…` : url.slice(0, 200));

const tooLarge = (url: string, max: number) => ericError('ERIC_INPUT_TOO_LARGE', `${describeUrl(url)} is larger than the ${max}-byte input limit`);

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function loadData(url: string, o: UrlLoaderOptions): Loaded {
  const comma = url.indexOf(',');
  if (comma < 0) throw ericError('ERIC_URL_INVALID', `${describeUrl(url)} is not a data: URL (no comma)`);
  const params = url.slice(5, comma).split(';');
  if (!params.includes('base64')) throw ericError('ERIC_URL_INVALID', `data: URLs must be base64-encoded (${describeUrl(url)})`);
  const body = url.slice(comma + 1);
  if (Math.floor((body.length * 3) / 4) > o.maxBytes + 3) throw tooLarge(url, o.maxBytes);
  const parts = body.split(',').map((b64, i) => {
    if (!BASE64.test(b64)) throw ericError('ERIC_URL_INVALID', `data: URL part ${i} is not valid base64`);
    return new Uint8Array(Buffer.from(b64, 'base64'));
  });
  if (parts.reduce((a, p) => a + p.length, 0) > o.maxBytes) throw tooLarge(url, o.maxBytes);
  return { ...(params[0] ? { mime: params[0] } : {}), parts };
}

async function loadFile(url: string, o: UrlLoaderOptions): Promise<Loaded> {
  if (!o.allowFile) throw ericError('ERIC_URL_NOT_ALLOWED', `file: URLs are disabled (start Eric with --allow-file-urls to enable them)`);
  let fh;
  try {
    fh = await open(fileURLToPath(url), 'r');
  } catch (e) {
    throw ericError('ERIC_URL_FETCH_FAILED', `cannot open ${describeUrl(url)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  try {
    const { size } = await fh.stat();
    if (size > o.maxBytes) throw tooLarge(url, o.maxBytes);
    const buf = new Uint8Array(size);
    await fh.read(buf, 0, size, 0);
    return { parts: [buf] };
  } finally {
    await fh.close();
  }
}

async function readBounded(res: UndiciResponse, url: string, max: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) { await res.body?.cancel(); throw tooLarge(url, max); }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const c of res.body ?? []) {
    total += (c as Uint8Array).length;
    if (total > max) throw tooLarge(url, max);
    chunks.push(c as Uint8Array);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

async function loadHttp(url: string, o: UrlLoaderOptions, signal?: AbortSignal): Promise<Loaded> {
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const sig = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const guard = o.guard ?? fetchGuard({ onlyHosts: o.allowHosts ?? [], allowPrivate: o.allowPrivate ?? [] });
  try {
    const { response: res, url: final } = await guard.fetch(url, { signal: sig, headers: { 'user-agent': 'cornserve-eric' } });
    if (!res.ok) {
      await res.body?.cancel();
      throw ericError('ERIC_URL_FETCH_FAILED', `GET ${describeUrl(final)} answered ${res.status} ${res.statusText}`);
    }
    const mime = res.headers.get('content-type')?.split(';')[0]?.trim();
    return { ...(mime ? { mime } : {}), parts: [await readBounded(res, url, o.maxBytes)] };
  } catch (e) {
    if (e instanceof EricError) throw e;
    if (e instanceof UrlNotAllowedError) throw ericError('ERIC_URL_NOT_ALLOWED', `${describeUrl(url)}: ${e.message}`);
    if (e instanceof TooManyRedirectsError) throw ericError('ERIC_URL_FETCH_FAILED', e.message);
    if (timeout.aborted) throw ericError('ERIC_URL_TIMEOUT', `fetching ${describeUrl(url)} did not finish within ${o.timeoutMs} ms`);
    if (signal?.aborted) throw e;
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw ericError('ERIC_URL_FETCH_FAILED', `fetching ${describeUrl(url)} failed: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
}

/** Loads `url` within the limits. */
export async function loadUrl(url: string, o: UrlLoaderOptions, signal?: AbortSignal): Promise<Loaded> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'data': return loadData(url, o);
    case 'http': case 'https': return loadHttp(url, o, signal);
    case 'file': return loadFile(url, o);
    default: throw ericError('ERIC_URL_NOT_ALLOWED', `unsupported URL scheme in ${describeUrl(url)} (use data:, http(s): or, when enabled, file:)`);
  }
}
