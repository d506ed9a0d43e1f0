// What tracing costs (issue E17 part 5): the span calls the code makes through @opentelemetry/api
// when no SDK is registered (every process without OTEL_EXPORTER_OTLP_ENDPOINT), and what the SDK
// adds when it is. In one run, alternating, so the figures are side by side:
//   1. one `inSpan` around an empty async function against the same function called directly, and
//      `activeTraceContext()` (what each outbox row stores), with no SDK and with the SDK;
//   2. whole engine lifecycles (bench/lib/engine.ts: register → volume → provision → ready →
//      release → Released, 8 in flight) with no SDK and with the SDK and an exporter that counts,
//      counting the spans one lifecycle makes and the engine process's CPU per lifecycle.
// The no-op's cost per lifecycle is then spans per lifecycle × the no-op's cost per span.
//
//   npx tsx bench/tracing.ts        BENCH_TRACING_N=100 lifecycles per round, BENCH_TRACING_ROUNDS=3
import { context, propagation, trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { loadavg } from 'node:os';
import { activeTraceContext, inSpan } from '../lib/tracing.ts';
import { startTracing, type Tracing } from '../lib/tracing-sdk.ts';
import { drive, openEngine, productionLike } from './lib/engine.ts';

const n = Number(process.env['BENCH_TRACING_N'] ?? 100);
const rounds = Number(process.env['BENCH_TRACING_ROUNDS'] ?? 3);
const CALLS = 200_000;

const empty = () => Promise.resolve(1);

/** Nanoseconds per call of `fn`, over CALLS calls one after the other. */
async function perCall(fn: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn();
  return Number(process.hrtime.bigint() - started) / CALLS;
}

/** Counts the spans it is given and keeps none (an exporter that stored them would grow the heap). */
let exported = 0;
const counting = (): SpanExporter => ({
  export: (spans, done) => {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
});
let sdk: Tracing | null = null;
async function setTracing(on: boolean): Promise<void> {
  if (on && sdk === null) sdk = await startTracing({ exporter: counting(), role: 'bench' });
  if (!on && sdk !== null) {
    await sdk.close();
    sdk = null;
    // Back to the API's no-op: nothing registered.
    trace.disable();
    context.disable();
    propagation.disable();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const r = (value: number, digits = 1) => Number(value.toFixed(digits));

async function main() {
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(', ');
  console.log(`tracing bench: ${n} lifecycles × ${rounds} rounds per mode, load average ${load()}`);
  const engine = await openEngine({ workers: productionLike(8) });
  const modes = { noop: false, sdk: true } as const;
  const figures: Record<
    keyof typeof modes,
    { bare: number[]; span: number[]; ctx: number[]; cpu: number[]; wall: number[]; spans: number[] }
  > = {
    noop: { bare: [], span: [], ctx: [], cpu: [], wall: [], spans: [] },
    sdk: { bare: [], span: [], ctx: [], cpu: [], wall: [], spans: [] },
  };
  try {
    await drive(engine.h, {
      n: 20,
      clients: 4,
      pollMs: 50,
      waitMs: 10_000,
      tag: 'trace-warm',
      label: 'warm-up',
    });
    for (let round = 0; round < rounds; round++) {
      for (const [mode, on] of Object.entries(modes) as [keyof typeof modes, boolean][]) {
        await setTracing(on);
        const f = figures[mode];
        // The calls run inside a span when the SDK is on, as the code's do (under the request's).
        await inSpan('bench', {}, async () => {
          f.bare.push(await perCall(empty));
          f.span.push(await perCall(() => inSpan('x', {}, empty)));
          f.ctx.push(await perCall(activeTraceContext));
        });
        exported = 0;
        const cpuBefore = process.cpuUsage();
        const run = await drive(engine.h, {
          n,
          clients: 8,
          pollMs: 50,
          waitMs: 10_000,
          tag: `trace-${mode}-${round}`,
          label: `${mode} round ${round + 1}`,
        });
        const cpu = process.cpuUsage(cpuBefore);
        if (run.completed !== n)
          throw new Error(`${mode}: ${run.completed}/${n} lifecycles (${run.errors[0]})`);
        f.cpu.push((cpu.user + cpu.system) / 1000 / n);
        f.wall.push(run.wallMs);
        // The bench's own `inSpan('x')` spans ended before the reset; what is left is the lifecycles'.
        f.spans.push(exported / n);
      }
    }
  } finally {
    await setTracing(false);
    await engine.close();
  }
  const noop = figures.noop;
  const withSdk = figures.sdk;
  const spanNs = median(noop.span) - median(noop.bare);
  const sdkSpanNs = median(withSdk.span) - median(withSdk.bare);
  const spans = median(withSdk.spans);
  const noopPerLifecycleUs = (spans * spanNs + median(noop.ctx) * spans) / 1000;
  const result = {
    perCallNs: {
      noSdk: { inSpanOverhead: r(spanNs), activeTraceContext: r(median(noop.ctx)) },
      sdk: { inSpanOverhead: r(sdkSpanNs), activeTraceContext: r(median(withSdk.ctx)) },
    },
    spansPerLifecycle: r(spans, 2),
    engineCpuMsPerLifecycle: { noSdk: r(median(noop.cpu), 2), sdk: r(median(withSdk.cpu), 2) },
    wallMsPerRound: { noSdk: r(median(noop.wall)), sdk: r(median(withSdk.wall)) },
    // An upper bound: as if every span also asked for the trace context, as the outbox rows do.
    noSdkCostPerLifecycleUs: r(noopPerLifecycleUs, 2),
    noSdkShareOfEngineCpu: `${r((noopPerLifecycleUs / 1000 / median(noop.cpu)) * 100, 3)} %`,
    sdkCpuRatio: r(median(withSdk.cpu) / median(noop.cpu), 3),
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`load average at the end ${load()}`);
}

await main();
