/**
 * OpenTelemetry for every process: W3C trace context in and out on every hop, spans exported over OTLP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, or to the span processors a test gives.
 *
 * Every process calls startTelemetry(name) at start; this module decides what it means:
 *  - spans on (an endpoint or processors): the SDK runs; every hop opens spans and sends its own span as the
 *    traceparent;
 *  - spans off (neither): no SDK and no span objects on the hot paths, but the trace context still passes:
 *    the traceparent a request came with is kept for it (one AsyncLocalStorage, only when there is one) and sent
 *    on unchanged, as W3C trace context asks of a participant that does not trace.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { INVALID_SPAN_CONTEXT, context, propagation, trace, SpanKind, SpanStatusCode, type Span, type Context } from '@opentelemetry/api';
import type { RequestHandler } from 'express';

export { context, propagation, trace, SpanKind, SpanStatusCode, type Span, type Context };

export const tracer = () => trace.getTracer('cornserve');

let started = false;
let shutdownFn: (() => Promise<void>) | undefined;

/**
 * Whether this process records spans (startTelemetry found an exporter). When it does not, the hot paths skip
 * spans entirely (no context extraction, no span objects) and only pass the caller's traceparent on.
 */
export const tracingOn = (): boolean => shutdownFn !== undefined;

/** The span used when tracing is off: records nothing, carries no context. */
export const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** A W3C traceparent (version 00 layout; all-zero ids are invalid). */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
export const isTraceparent = (v: unknown): v is string => typeof v === 'string' && TRACEPARENT.test(v);

/** With spans off: the traceparent of the request being served, passed on unchanged. */
const passedOn = new AsyncLocalStorage<string>();

/**
 * Starts telemetry once per process (every process's main calls it). With OTEL_EXPORTER_OTLP_ENDPOINT set, spans
 * go there (OTLP/HTTP); with `spanProcessors` (tests), to them; with neither, spans stay off and the trace context
 * is passed on unchanged (see above).
 */
export async function startTelemetry(serviceName: string, spanProcessors: unknown[] = []): Promise<void> {
  if (started) return;
  started = true;
  const processors = [...spanProcessors];
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT && processors.length === 0) {
    const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace');
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter() }));
  }
  if (processors.length === 0) return;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: processors as never,
    autoDetectResources: false,
    instrumentations: [],
  });
  sdk.start();
  shutdownFn = () => sdk.shutdown();
}

/** Flushes and stops the SDK (spans end here); safe to call when it never started. */
export async function stopTelemetry(): Promise<void> {
  const f = shutdownFn;
  shutdownFn = undefined;
  started = false;
  await f?.();
}

/** Express middleware: a SERVER span per request, child of the caller's traceparent. */
export function traceRequests(component: string): RequestHandler {
  return (req, res, next) => {
    if (!tracingOn()) {
      const tp = req.headers.traceparent;
      return isTraceparent(tp) ? passedOn.run(tp, next) : next();
    }
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
  if (!tracingOn()) {
    const tp = passedOn.getStore();
    return tp ? { traceparent: tp } : {};
  }
  const h: Record<string, string> = {};
  propagation.inject(context.active(), h);
  return h;
}

/** The active traceparent, e.g. to put in a CloudEvent or a ZeroMQ message. */
export function currentTraceparent(): string | undefined {
  if (!tracingOn()) return passedOn.getStore();
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

/** Runs `fn` in the context carried by a traceparent string (from a CloudEvent or ZeroMQ message); with spans off, `fn` passes it on. */
export function withTraceparent<T>(traceparent: string | undefined, fn: () => T): T {
  if (!isTraceparent(traceparent)) return fn();
  if (!tracingOn()) return passedOn.run(traceparent, fn);
  return context.with(propagation.extract(context.active(), { traceparent }), fn);
}
