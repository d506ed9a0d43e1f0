// Starts the OpenTelemetry SDK for this process, only when asked: with OTEL_EXPORTER_OTLP_ENDPOINT
// set, spans go to that OTLP/HTTP endpoint in batches (the exporter reads the standard OTEL_*
// settings: headers, timeout, OTEL_SERVICE_NAME); without it nothing is registered and
// lib/tracing.ts stays the API's no-op. Tests pass their own exporter (an in-memory one).
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  /** Sends what is buffered and stops. */
  close(): Promise<void>;
}

export interface TracingOptions {
  /** Export here, span by span (tests); default: OTLP/HTTP when the endpoint setting is set. */
  exporter?: SpanExporter;
  /** The process's role (`api`, `worker`, `serve`), a resource attribute. */
  role?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

export async function startTracing(options: TracingOptions = {}): Promise<Tracing | null> {
  const env = options.env ?? process.env;
  let processor;
  if (options.exporter !== undefined) {
    processor = new SimpleSpanProcessor(options.exporter);
  } else {
    const endpoint = env['OTEL_EXPORTER_OTLP_ENDPOINT'] ?? env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];
    if (endpoint === undefined || endpoint === '') return null;
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    processor = new BatchSpanProcessor(new OTLPTraceExporter());
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env['OTEL_SERVICE_NAME'] ?? 'sandlot',
      ...(options.role === undefined ? {} : { 'sandlot.role': options.role }),
    }),
    spanProcessors: [processor],
  });
  // The global tracer, AsyncLocalStorage context and the W3C trace-context propagator.
  provider.register();
  return { close: () => provider.shutdown() };
}
