// Traces (lib/tracing.ts) with an in-memory exporter: a provision posted over HTTP is one trace from
// the request span, through the transition that committed it and the outbox row that stored its
// trace context, to the worker's job, the provider call and the commit of its result, whether the
// job went through the in-process queue or BullMQ (Redis).
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../lib/tracing-sdk.ts';
import { provisionBody, setupScenario, waitForLease } from '../support/sandbox-flow.ts';
import { inFreshHarness } from '../support/sandbox-scenarios.ts';
import { deleteKeys, redisUrl, uniquePrefix, waitFor } from './workers-support.ts';

const exporter = new InMemorySpanExporter();
let tracing: Tracing | null = null;

beforeAll(async () => {
  tracing = await startTracing({ exporter, role: 'test' });
});
afterAll(async () => {
  await tracing?.close();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** The names from `span` up to the root, following parent span IDs among the exported spans. */
function ancestry(span: ReadableSpan, spans: readonly ReadableSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const names = [span.name];
  for (let at = byId.get(parentOf(span) ?? ''); at !== undefined; at = byId.get(parentOf(at) ?? '')) {
    names.push(at.name);
  }
  return names;
}

const transports = [
  { name: 'in-process queue', redis: false },
  { name: 'BullMQ', redis: true },
] as const;

describe.each(transports)('a provision traced end to end ($name)', ({ redis }) => {
  const prefix = uniquePrefix();
  afterAll(async () => {
    if (redis) await deleteKeys(redisUrl(0), prefix);
  });

  it('links the request span to the provider call span and its result commit', async () => {
    await inFreshHarness(
      'postgres',
      { workers: redis ? { redisUrl: redisUrl(0), prefix, relayPollMs: 100 } : {} },
      async (h) => {
        const s = await setupScenario(h);
        exporter.reset();
        const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
          token: s.token,
          body: provisionBody(s),
        });
        expect(provisioned.status).toBe(202);
        await waitForLease(h, s, (lease) => lease['state'] === 'Active');
        await waitFor(() => exporter.getFinishedSpans().some((span) => span.name === 'commit result'));

        const spans = exporter.getFinishedSpans();
        const request = spans.find((span) => /^POST .*sandbox\/provision$/.test(span.name));
        const call = spans.find((span) => span.name === 'provider provision');
        const commit = spans.find(
          (span) => span.name === 'commit result' && span.attributes['sandlot.kind'] === 'provision',
        );
        expect(request, spans.map((span) => span.name).join(', ')).toBeDefined();
        expect(call).toBeDefined();
        expect(commit).toBeDefined();
        const traceId = request!.spanContext().traceId;
        expect(call!.spanContext().traceId).toBe(traceId);
        expect(commit!.spanContext().traceId).toBe(traceId);
        // provider call → the worker's job → the committing transition → the request.
        expect(ancestry(call!, spans)).toEqual([
          'provider provision',
          'effect job',
          'transition sandbox.provision',
          request!.name,
        ]);
        expect(call!.attributes['sandlot.outcome']).toBe('Succeeded');

        // The outbox row keeps the trace context: a re-publish after a restart continues the trace.
        const { rows } = await h.db.query<{ traceContext: string | null }>(
          `SELECT trace_context AS "traceContext" FROM outbox
            WHERE environment_id = $1 AND attempt_id LIKE '%.provision.%'`,
          [s.environmentId],
        );
        expect(rows).toHaveLength(1);
        expect(rows[0]!.traceContext).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      },
    );
  });
});
