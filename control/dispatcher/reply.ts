/**
 * Writes a DispatchResult as the HTTP reply (exactly what readDispatchResponse in functions/sdk/dispatch.ts reads):
 *  - no stream: `application/json`, the outputs array;
 *  - stream: `application/x-ndjson`; line 1 = the outputs array (the streaming output is `{}`), then one line
 *    per chunk of the last output. If the stream breaks mid-way (executor lost, deadline), the reply ends with
 *    ONE final line `{"error": {"code", "message", "details"?}}` — the status is already 200 by then.
 */
import type { Response } from 'express';
import type { DispatchResult, ErrorJSON } from '../../functions/sdk/index.js';
import { toErrorBody } from '../../lib/http.js';

/** Resolves when `res` can take more data, or has closed (a gone client must not hang the writer). */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Sends the result; resolves with the error that broke the stream, if one did. */
export async function writeDispatchResult(res: Response, result: DispatchResult): Promise<(ErrorJSON & { internal?: string }) | undefined> {
  if (!result.stream) {
    // What res.json sends (same headers), without express's per-reply charset parsing and freshness checks.
    const text = JSON.stringify(result.outputs);
    res.statusCode = 200;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(text));
    res.end(text);
    return undefined;
  }
  res.status(200).set({ 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(`${JSON.stringify(result.outputs)}\n`);
  try {
    let corked = false;
    for await (const line of result.stream) {
      if (res.destroyed) break; // the client left; leaving the loop closes the stream and releases the executor
      // Lines that arrive in one network chunk come in one burst of microtasks: send them as one write.
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(() => {
          corked = false;
          res.uncork();
        });
      }
      if (!res.write(`${line}\n`)) await drained(res);
    }
    return undefined;
  } catch (e) {
    const { body } = toErrorBody(e);
    if (!res.destroyed) res.write(`${JSON.stringify(body)}\n`);
    const internal = (e as { internal?: unknown }).internal;
    return typeof internal === 'string' ? { ...body.error, internal } : body.error;
  } finally {
    res.end();
  }
}
