/**
 * Spans of a whole platform in one test: this process records to memory (service `in-process`), and child
 * processes started with `childEnv` export over OTLP/HTTP to a receiver run here. Always `await tr.stop()`.
 *
 *   const tr = await startTracing();
 *   const p = await startPlatform({ childEnv: { ...tr.childEnv } });
 *   await waitUntil('spans', () => tr.spans(TRACE_ID).some((s) => s.name === 'sidecar.recv'));
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { startTelemetry, stopTelemetry } from '../../lib/telemetry.js';

export interface CollectedSpan { name: string; service: string; traceId: string; spanId: string; parentSpanId?: string }

interface OtlpCollector {
  readonly endpoint: string;
  readonly spans: CollectedSpan[];
  close(): Promise<void>;
}

type Attr = { key: string; value: { stringValue?: string } };
type Otlp = { resourceSpans?: Array<{ resource?: { attributes?: Attr[] }; scopeSpans?: Array<{ spans?: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string }> }> }> };

/** The OTLP/HTTP receiver alone: `spans` lists what children exported, with their service name. */
async function startOtlpCollector(): Promise<OtlpCollector> {
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

export interface Tracing {
  /** The environment that makes a child process export its spans here (batches every 50 ms). */
  readonly childEnv: Record<string, string>;
  /** Every finished span of `traceId` so far, this process's and the children's. */
  spans(traceId: string): CollectedSpan[];
  stop(): Promise<void>;
}

export async function startTracing(): Promise<Tracing> {
  const exporter = new InMemorySpanExporter();
  await startTelemetry('cornserve-test', [new SimpleSpanProcessor({ exporter })]);
  const collector = await startOtlpCollector();
  return {
    childEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' },
    spans: (traceId) => [
      ...exporter.getFinishedSpans().map((s) => ({
        name: s.name, service: 'in-process', traceId: s.spanContext().traceId, spanId: s.spanContext().spanId,
        ...(s.parentSpanContext?.spanId ? { parentSpanId: s.parentSpanContext.spanId } : {}),
      })),
      ...collector.spans,
    ].filter((s) => s.traceId === traceId),
    async stop() {
      await collector.close();
      await stopTelemetry();
    },
  };
}
