/**
 * Server-sent events in the reference's format: one `data: {"event": {...}}` line per event, blank line
 * after each; a comment line every 15 s keeps proxies from closing a long registration.
 */
import type { Response } from 'express';

export interface SseWriter {
  send(event: { type: string } & Record<string, unknown>): void;
  end(): void;
}

export function startSse(res: Response, keepAliveMs = 15_000): SseWriter {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const timer = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
  timer.unref();
  res.on('close', () => clearInterval(timer));
  return {
    send(event) {
      if (!res.writableEnded) res.write(`data: ${JSON.stringify({ event })}\n\n`);
    },
    end() {
      clearInterval(timer);
      if (!res.writableEnded) res.end();
    },
  };
}
