/**
 * The sidecar server's spans. Each one joins the trace of the W3C traceparent its client request or peer
 * message carried; a sidecar without telemetry passes the incoming traceparent on unchanged, so a trace
 * survives it. Untraced requests (no traceparent) make no span at all: the hot path stays as it was.
 */
import { SpanKind, SpanStatusCode, context, propagation, trace, tracer, withSpan, withTraceparent, type Span } from '../../lib/telemetry.js';

export { SpanKind, type Span };
type Attributes = Record<string, string | number | boolean>;

/** Runs `fn` in a SERVER span, child of `traceparent`. */
export function serveTraced<T>(name: string, traceparent: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  return withTraceparent(traceparent, () => withSpan(name, fn, attributes, SpanKind.SERVER));
}

/**
 * Starts a span the caller ends with `endSpan`, a child of `traceparent`. Returns the traceparent to pass on
 * (the new span's, or the incoming one when telemetry is off).
 */
export function startSpan(name: string, traceparent: string, attributes: Attributes, kind: SpanKind): { span: Span; traceparent: string } {
  const parent = propagation.extract(context.active(), { traceparent });
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), carrier);
  return { span, traceparent: carrier.traceparent ?? traceparent };
}

export function endSpan(span: Span, err?: Error | null): void {
  if (err) {
    span.recordException(err);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  }
  span.end();
}
