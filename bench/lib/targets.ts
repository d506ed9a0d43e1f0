// The targets of issue E15 (and the three of E9 it does not restate) against one run of the bench,
// each "met", "not met", or "-" with why it was not measured. The throughput, cost and observation
// figures are this machine's; the peers' ratios are what the target is about.
import type { EnginePoint } from './engine.ts';
import type { ObservationResult } from './observe.ts';
import { retentionFlat, type RetentionResult } from './retention.ts';
import type { Summary } from './stats.ts';

export interface Target {
  target: string;
  measured: string;
  met: 'met' | 'not met' | 'partly' | '-';
}

/** What the targets read of a run (bench/lifecycle.ts Results). */
export interface TargetInput {
  http: Array<{
    clients: number;
    cpuMsPerLifecycle: Record<string, number>;
    controlPlaneWriteTransactionsPerLifecycle: number;
    writeTransactionsPerLifecycle: number;
    upstreamCallsPerLifecycle: Record<string, number>;
    latencyMs: Record<string, Summary>;
  }>;
  engine: EnginePoint[];
  /** ratio_to_pg_limit for a write-commit rate at a client count (NaN: no pgbench point). */
  pgRatio: (clients: number, commitsPerSecond: number) => number;
  /** The "Sandlot / DBOS|Restate, http|engine, N clients" ratios. */
  ratios: Array<{ name: string; value: number | string | null; why?: string }>;
  observation: ObservationResult | null;
  retention: RetentionResult | null;
  /** 2 workers / 1 worker; the 1k vs 100k cost ratios; RSS added by 100k idle Environments. */
  workersRatio: number | undefined;
  tableCosts: Array<number | undefined>;
  idleRssMiBAdded: number | undefined;
  failedPhases: string[];
  /** Why a part was not measured, by part (e.g. { peers: '--no-peers' }). */
  skipped: Record<string, string>;
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
const verdict = (ok: boolean | undefined): Target['met'] => (ok === undefined ? '-' : ok ? 'met' : 'not met');
const shown = (value: number | undefined) =>
  value === undefined || Number.isNaN(value) ? '-' : String(value);

export function e15Targets(r: TargetInput): Target[] {
  const list: Target[] = [];
  const http1 = r.http.find((p) => p.clients === 1);
  for (const span of ['provision→Active', 'release→Released']) {
    const s = http1?.latencyMs[span];
    list.push({
      target: `1. ${span}, HTTP, 1 client: p50 ≤ 10 ms and p99 ≤ 30 ms`,
      measured:
        s === undefined
          ? `- ${r.skipped['http1'] ?? 'no 1-client HTTP point'}`
          : `p50 ${s.p50.toFixed(1)}, p99 ${s.p99.toFixed(1)}`,
      met: verdict(s === undefined ? undefined : s.p50 <= 10 && s.p99 <= 30),
    });
  }
  for (const clients of [8, 64]) {
    const suffix = `, ${plural(clients, 'client')}`;
    const peer = r.ratios.filter((x) => x.name.startsWith('Sandlot / ') && x.name.endsWith(suffix));
    const values = peer.map((x) => (typeof x.value === 'number' ? x.value : Number.NaN));
    const complete = values.length === 4 && values.every((v) => !Number.isNaN(v));
    list.push({
      target: `2. Sandlot / DBOS and Sandlot / Restate ≥ 1.0, HTTP and engine-only, ${plural(clients, 'client')}`,
      measured:
        peer.length === 0
          ? '-'
          : peer
              .map(
                (x) =>
                  `${x.name.replace(/^Sandlot \/ /, '').replace(suffix, '')} ${x.value ?? `- (${x.why ?? ''})`}`,
              )
              .join('; '),
      met: complete ? verdict(values.every((v) => v >= 1)) : '-',
    });
  }
  const engine8 = r.engine.find((p) => p.clients === 8);
  const pgRatio = engine8 === undefined ? Number.NaN : r.pgRatio(8, engine8.writeCommitsPerSecond);
  list.push({
    target: '2. engine-only ratio_to_pg_limit ≥ 0.5 (8 clients)',
    measured: shown(pgRatio),
    met: verdict(Number.isNaN(pgRatio) ? undefined : pgRatio >= 0.5),
  });
  const http8 = r.http.find((p) => p.clients === 8);
  const tx = http8?.controlPlaneWriteTransactionsPerLifecycle;
  list.push({
    target: '3. ≤ 8 control-plane write transactions per lifecycle (HTTP, 8 clients)',
    measured:
      tx === undefined
        ? '-'
        : `${tx} (${http8?.writeTransactionsPerLifecycle} with the simulated provider's own)`,
    met: verdict(tx === undefined ? undefined : tx <= 8),
  });
  const upstream =
    http8 === undefined
      ? undefined
      : (http8.upstreamCallsPerLifecycle['projects'] ?? 0) +
        (http8.upstreamCallsPerLifecycle['selection'] ?? 0);
  list.push({
    target: '3. ≤ 8 upstream calls (Projects, run selection) per lifecycle (HTTP, 8 clients)',
    measured: shown(upstream),
    met: verdict(upstream === undefined ? undefined : upstream <= 8),
  });
  for (const [who, key, limit] of [
    ['API', 'api', 10],
    ['PostgreSQL', 'postgres', 8],
  ] as const) {
    const ms = http8?.cpuMsPerLifecycle[key];
    list.push({
      target: `3. ${who} CPU ≤ ${limit} ms per lifecycle (HTTP, 8 clients)`,
      measured: shown(ms),
      met: verdict(ms === undefined ? undefined : ms <= limit),
    });
  }
  const o = r.observation;
  const retire = o?.retirement;
  const p99 = retire?.retireMs?.p99;
  const allRetired = retire !== undefined && retire.retired === retire.finished;
  list.push({
    target: '4. a finished sandbox retired within 5 s p99, 10,000 Active leases',
    measured:
      o === null
        ? `- ${r.skipped['observation'] ?? 'observation failed (see notes)'}`
        : `${retire?.retired}/${retire?.finished} retired, p99 ${allRetired ? p99 : `> ${retire?.timeoutS} s`} ms, ${o.leases} Active leases`,
    met:
      o === null
        ? '-'
        : !allRetired || (p99 ?? Infinity) > 5_000
          ? 'not met'
          : o.leases >= 10_000
            ? 'met'
            : 'partly',
  });
  list.push({
    target: '4. steady-state cost of observation per 1,000 Active leases reported',
    measured:
      o === null
        ? '-'
        : `CPU ${o.steady.cpuSecondsPerMinPer1000.engine} s/min (API + workers) + ${o.steady.cpuSecondsPerMinPer1000.postgres} s/min (PostgreSQL), ${o.steady.writeTransactionsPerMinPer1000} write tx/min, ${o.steady.rowsWrittenPerMinPer1000} rows/min, ${o.steady.describesPerMinPer1000} describes/min`,
    met: o === null ? '-' : 'met',
  });
  const kept = r.retention;
  list.push({
    target: '5. table sizes flat across a day of lifecycles (pruning)',
    measured:
      kept === null
        ? `- ${r.skipped['retention'] ?? 'tables over a day failed (see notes)'}`
        : `rows/lifecycle once the window is full (unpruned): outbox ${kept.growthPerLifecycle.outbox} (${kept.unprunedPerLifecycle.outbox}), ` +
          `attempts ${kept.growthPerLifecycle.provider_attempts} (${kept.unprunedPerLifecycle.provider_attempts}), ` +
          `journal ${kept.growthPerLifecycle.environment_journal} (${kept.unprunedPerLifecycle.environment_journal}); ` +
          `${kept.rounds.length} rounds of ${kept.perRound}`,
    met: kept === null ? '-' : verdict(retentionFlat(kept)),
  });
  list.push({
    target: '6. every phase of the bench ran',
    measured: r.failedPhases.length === 0 ? 'all' : `failed: ${r.failedPhases.join('; ')}`,
    met: verdict(r.failedPhases.length === 0),
  });
  // E9's own, not restated by E15.
  list.push({
    target: '(E9) 2 workers ≥ 1.6× 1 worker',
    measured: shown(r.workersRatio),
    met: verdict(
      r.workersRatio === undefined || Number.isNaN(r.workersRatio) ? undefined : r.workersRatio >= 1.6,
    ),
  });
  const costs = r.tableCosts;
  list.push({
    target: '(E9) cost with 100k Environments ≤ 1.2× with 1k',
    measured: `in-process ${shown(costs[0])}; HTTP wall ${shown(costs[1])}; HTTP CPU ${shown(costs[2])}`,
    met: verdict(costs.some((c) => c === undefined) ? undefined : costs.every((c) => (c ?? 0) <= 1.2)),
  });
  const added = r.idleRssMiBAdded;
  list.push({
    target: '(E9) API process RSS added by 100k idle Environments < 50 MB',
    measured: added === undefined ? '-' : `${added} MiB`,
    met: verdict(added === undefined ? undefined : added * 1.048576 < 50),
  });
  return list;
}
