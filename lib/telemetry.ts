/**
 * OpenTelemetry for every process: W3C trace context in and out, spans exported over OTLP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, or to an in-memory exporter in tests.
 */
import { INVALID_SPAN_CONTEXT, context, propagation, trace, SpanKind, SpanStatusCode, type Span, type Context } from '@opentelemetry/api';
import type { RequestHandler } from 'express';

export { context, propagation, trace, SpanKind, SpanStatusCode, type Span, type Context };

export const tracer = () => trace.getTracer('cornserve');

let shutdownFn: (() => Promise<void>) | undefined;

/**
 * Whether startTelemetry ran in this process. When it did not, propagation and spans are no-ops anyway,
 * so the hot paths skip them entirely (no context extraction, no span objects, no context switches).
 */
export const tracingOn = (): boolean => shutdownFn !== undefined;

/** The span used when tracing is off: records nothing, carries no context. */
export const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Starts the SDK once per process. With OTEL_EXPORTER_OTLP_ENDPOINT set, spans go there (OTLP/HTTP);
 * otherwise only propagation is active (spans are no-ops) unless `spanProcessors` are given (tests).
 */
export async function startTelemetry(serviceName: string, spanProcessors: unknown[] = []): Promise<void> {
  if (shutdownFn) return;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const processors = [...spanProcessors];
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT && processors.length === 0) {
    const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace');
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http' as string);
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter() }));
  }
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: processors as never,
    autoDetectResources: false,
    instrumentations: [],
  });
  sdk.start();
  shutdownFn = () => sdk.shutdown();
}

export async function stopTelemetry(): Promise<void> {
  const f = shutdownFn;
  shutdownFn = undefined;
  await f?.();
}

/** Express middleware: a SERVER span per request, child of the caller's traceparent. */
export function traceRequests(component: string): RequestHandler {
  return (req, res, next) => {
    if (!tracingOn()) return next();
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer().startSpan(`${component} ${req.method} ${req.path}`, { kind: SpanKind.SERVER }, parent);
    res.on('finish', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), next);
  };
}

/** Headers carrying the active trace context (traceparent), to add to an outgoing request. */
export function traceHeaders(): Record<string, string> {
  if (!tracingOn()) return {};
  const h: Record<string, string> = {};
  propagation.inject(context.active(), h);
  return h;
}

/** The active traceparent, e.g. to put in a CloudEvent or a ZeroMQ message. */
export function currentTraceparent(): string | undefined {
  if (!tracingOn()) return undefined;
  return traceHeaders().traceparent;
}

/** Runs `fn` inside a child span; records errors; ends the span. */
export async function withSpan<T>(name: string, fn: (span: Span) => Promise<T>, attributes: Record<string, string | number | boolean> = {}, kind = SpanKind.INTERNAL): Promise<T> {
  if (!tracingOn()) return fn(NOOP_SPAN);
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.recordException(e as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** Runs `fn` in the context carried by a traceparent string (from a CloudEvent or ZeroMQ message). */
export function withTraceparent<T>(traceparent: string | undefined, fn: () => T): T {
  if (!traceparent || !tracingOn()) return fn();
  return context.with(propagation.extract(context.active(), { traceparent }), fn);
}
