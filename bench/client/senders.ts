/**
 * The two HTTP senders. Each sends one request and measures it as vLLM's benchmark client does: TTFT is the
 * time to the first token (chat: the first SSE chunk with content; invoke: the first NDJSON line or the first
 * bytes of a JSON reply), ITL the gaps between later tokens, E2EL the time to the last byte. Output tokens come
 * from the stream's usage chunk when it has one, else one per content chunk. Failures are measured too:
 * HTTP errors keep their status and the server's error code, an error event inside a stream is a failure, and
 * no response at all is status 0 with the network error's code.
 */
import { ndjsonLines } from '../../functions/sdk/index.js';
import type { RequestRecord } from '../metrics/record.js';

export type Measured = Pick<RequestRecord, 'ok' | 'status' | 'errorCode' | 'errorMessage' | 'ttftMs' | 'e2elMs' | 'itlMs' | 'outputTokens'>;

export interface SendOptions {
  /** Aborts the request (Ctrl-C past the drain bound, or the client timeout). */
  signal?: AbortSignal;
  /** What the abort reason's code becomes in the record. */
  abortCode?: () => string;
}

export interface Target {
  /** POSTs one prepared body; resolves with its measurements (never rejects). */
  send(body: Record<string, unknown>, o?: SendOptions): Promise<Measured>;
}

/** `{error: {code, message}}` (gateway and OpenAI shapes) → code and message. */
function errorOf(v: unknown): { code: string; message: string } | undefined {
  const e = (v as { error?: { code?: unknown; type?: unknown; message?: unknown } } | null)?.error;
  if (!e || typeof e !== 'object') return undefined;
  return { code: String(e.code ?? e.type ?? 'ERROR'), message: String(e.message ?? '') };
}

/** Token timing of one streamed reply. */
class Stopwatch {
  readonly t0 = performance.now();
  first?: number;
  last?: number;
  readonly itl: number[] = [];
  tokens = 0;

  token(): void {
    const now = performance.now();
    if (this.first === undefined) this.first = now;
    else this.itl.push(now - this.last!);
    this.last = now;
    this.tokens++;
  }

  done(extra: Partial<Measured> = {}): Measured {
    const end = performance.now();
    return {
      ok: true, status: 200, itlMs: this.itl, outputTokens: this.tokens,
      ...(this.first !== undefined ? { ttftMs: this.first - this.t0 } : {}),
      e2elMs: end - this.t0, ...extra,
    };
  }

  failed(status: number, code: string, message: string): Measured {
    return { ok: false, status, errorCode: code, errorMessage: message.slice(0, 500), itlMs: this.itl, outputTokens: this.tokens, e2elMs: performance.now() - this.t0 };
  }
}

async function post(url: string, body: unknown, watch: Stopwatch, o: SendOptions): Promise<Response | Measured> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...(o.signal ? { signal: o.signal } : {}) });
    if (res.ok) return res;
    const text = await res.text();
    let err: { code: string; message: string } | undefined;
    try {
      err = errorOf(JSON.parse(text));
    } catch {
      /* not JSON */
    }
    return watch.failed(res.status, err?.code ?? `HTTP_${res.status}`, err?.message ?? text);
  } catch (e) {
    return networkFailure(e, watch, o);
  }
}

function networkFailure(e: unknown, watch: Stopwatch, o: SendOptions): Measured {
  if (o.signal?.aborted) return watch.failed(0, o.abortCode?.() ?? 'CANCELLED', String((e as Error).message));
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return watch.failed(0, cause?.code ?? 'NETWORK_ERROR', cause?.message ?? (e as Error).message);
}

/** `--api chat`: POST {gateway}/v1/chat/completions with stream: true, reading SSE `data:` events. */
export function chatTarget(gatewayUrl: string): Target {
  const url = new URL('/v1/chat/completions', gatewayUrl).href;
  return {
    async send(body, o = {}) {
      const watch = new Stopwatch();
      const res = await post(url, body, watch, o);
      if (!(res instanceof Response)) return res;
      let usageTokens: number | undefined;
      try {
        for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') break;
          const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string | null; audio?: unknown } }>; usage?: { completion_tokens?: number } | null };
          const err = errorOf(chunk);
          if (err) return watch.failed(res.status, err.code, err.message);
          if (chunk.usage?.completion_tokens !== undefined) usageTokens = chunk.usage.completion_tokens;
          if (chunk.choices?.some((c) => c.delta?.content || c.delta?.audio)) watch.token();
        }
      } catch (e) {
        return networkFailure(e, watch, o);
      }
      return watch.done(usageTokens !== undefined ? { outputTokens: usageTokens } : {});
    },
  };
}

/** `--api invoke`: POST {gateway}/app/invoke/APP {request_data}; JSON (one chunk) or NDJSON (one chunk per line). */
export function invokeTarget(gatewayUrl: string, app: string, timeoutMs?: number): Target {
  const url = new URL(`/app/invoke/${encodeURIComponent(app)}${timeoutMs ? `?timeout_ms=${timeoutMs}` : ''}`, gatewayUrl).href;
  return {
    async send(body, o = {}) {
      const watch = new Stopwatch();
      const res = await post(url, { request_data: body }, watch, o);
      if (!(res instanceof Response)) return res;
      let usageTokens: number | undefined;
      try {
        if (!(res.headers.get('content-type') ?? '').includes('ndjson')) {
          for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) if (part.length && watch.first === undefined) watch.token();
          return watch.done();
        }
        for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
          const chunk = JSON.parse(line) as Record<string, unknown> & { usage?: { completion_tokens?: number } | null; choices?: Array<{ delta?: { content?: string | null; audio?: unknown } }> };
          const err = errorOf(chunk);
          if (err && Object.keys(chunk).length === 1) return watch.failed(res.status, err.code, err.message);
          if (chunk.usage?.completion_tokens !== undefined) usageTokens = chunk.usage.completion_tokens;
          // A chat chunk counts when it carries content; any other chunk is one output unit.
          if (!Array.isArray(chunk.choices) || chunk.choices.some((c) => c.delta?.content || c.delta?.audio)) watch.token();
        }
      } catch (e) {
        return networkFailure(e, watch, o);
      }
      return watch.done(usageTokens !== undefined ? { outputTokens: usageTokens } : {});
    },
  };
}
