/**
 * An OTLP/HTTP trace receiver for tests: child processes started with OTEL_EXPORTER_OTLP_ENDPOINT = `endpoint`
 * export their spans here (JSON), and `spans` lists them with their service name. Always `await c.close()`.
 *
 *   const c = await startOtlpCollector();
 *   const p = await startPlatform({ childEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' } });
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan { name: string; service: string; traceId: string; spanId: string; parentSpanId?: string }

export interface OtlpCollector {
  readonly endpoint: string;
  readonly spans: CollectedSpan[];
  close(): Promise<void>;
}

type Attr = { key: string; value: { stringValue?: string } };
type Otlp = { resourceSpans?: Array<{ resource?: { attributes?: Attr[] }; scopeSpans?: Array<{ spans?: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string }> }> }> };

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      for (const rs of (JSON.parse(body) as Otlp).resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) spans.push({ name: s.name, service, traceId: s.traceId, spanId: s.spanId, ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
