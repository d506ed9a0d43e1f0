// Traces through @opentelemetry/api only: without an SDK registered (lib/tracing-sdk.ts starts one
// when OTEL_EXPORTER_OTLP_ENDPOINT is set) every call here is the API's no-op, a few property
// reads. One trace runs from the HTTP request through the transition that commits, the outbox row
// (which stores the W3C trace context, so a restart or a re-publish keeps the link), the queue job,
// the worker's provider call and the commit of its result.
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

export const TRACER_NAME = 'sandlot';

const tracer = () => trace.getTracer(TRACER_NAME);

/** The active span's W3C `traceparent`, to store beside work that continues elsewhere; null: none. */
export function activeTraceContext(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'] ?? null;
}

/** The context a stored or received `traceparent` continues (the active one when there is none). */
export function contextFrom(traceparent: string | null | undefined): Context {
  if (traceparent === null || traceparent === undefined || traceparent === '') return context.active();
  return propagation.extract(context.active(), { traceparent });
}

export interface SpanOptions {
  attributes?: Attributes;
  kind?: SpanKind;
  /** The parent (default the active context). */
  parent?: Context;
}

/** Runs `work` in a new active span, ended when it settles; a throw marks the span an error. */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
    },
    options.parent ?? context.active(),
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export { SpanKind };
