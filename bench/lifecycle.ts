// The lifecycle benchmark (`npm run bench`, `npm run bench -- --quick`; never part of `npm test`).
// It starts everything itself on 127.0.0.1: a throw-away database `bench_<time>`, a unique BullMQ
// prefix on Redis, stand-ins for the JWKS (ES256), Projects and run selection, then `sandlot serve
// --no-workers` and `sandlot worker` as child processes in production mode. N Environments per point
// go register → Workspace volume → provision → inspect until readyForDispatch → release → Released
// over real HTTP, at each client count. Per point it prints lifecycles/s, latency percentiles per
// route and span, write transactions per lifecycle (transaction-ID delta; also without the
// simulated provider's own), CPU ms per lifecycle of the API, worker, PostgreSQL and Redis
// processes, peak RSS and upstream calls per lifecycle. In the same run: the PostgreSQL limit
// (pgbench on a transaction of the same shape, giving ratio_to_pg_limit), the engine-only variant
// (bench/lib/engine.ts), 1 vs 2 workers and 1 vs 2 API processes, 1k vs 100k Environments in the
// tables (bench/scale.ts in-process, and an API process's RSS and cost: bench/lib/idle.ts), and
// the DBOS and Restate peers (bench/peers/, installed first when missing). Every ratio is printed,
// with the reason when one could not be measured. Results go to bench/results/. See
// docs/performance.md.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './lib/root.ts';
import { runEngineOnly, type EnginePoint } from './lib/engine.ts';
import { driveHttp } from './lib/http-driver.ts';
import { measureTimeline, type TimelineResult } from './lib/timeline.ts';
import { parseOptions, usage, type BenchOptions } from './lib/options.ts';
import { measureIdleEnvironments, type IdleResult } from './lib/idle.ts';
import { interruptible, isInterrupted } from './lib/interrupt.ts';
import { ensurePeersInstalled, runPeersForBench, type PeersOutcome } from './lib/peers.ts';
import { measurePgLimit, type PgLimitPoint } from './lib/pg-limit.ts';
import { createBenchDatabase, openProbe, type BenchDatabase, type PgProbe } from './lib/postgres.ts';
import { status } from './lib/progress.ts';
import { startPrivatePostgres } from './lib/private-postgres.ts';
import { latencyRows, table } from './lib/report.ts';
import { prepareEntry, redisVersion, startStack, type Entry, type Stack } from './lib/stack.ts';
import { round, type Summary } from './lib/stats.ts';
import { openWindow } from './lib/window.ts';
import { measureTableScale, type TableScaleResult } from './scale.ts';
import { printObservation } from './observe.ts';
import { printRetention } from './retention.ts';
import { runRetention, type RetentionResult } from './lib/retention.ts';
import { runObservation, type ObservationResult } from './lib/observe.ts';
import { e15Targets, type Target } from './lib/targets.ts';

export { runEngineOnly } from './lib/engine.ts';

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

export interface HttpPoint {
  variant: 'http';
  /** Processes behind the benchmark, e.g. "1 API + 1 worker". */
  topology: string;
  clients: number;
  n: number;
  completed: number;
  failed: number;
  errors: string[];
  wallMs: number;
  lifecyclesPerSecond: number;
  writeTransactionsPerLifecycle: number;
  /** The same without the simulated provider's own writes (see PgProbe.providerWrites). */
  controlPlaneWriteTransactionsPerLifecycle: number;
  writeCommitsPerSecond: number;
  otherDatabaseCommits: number;
  requestsPerLifecycle: number;
  inspectionsPerLifecycle: number;
  cpuMsPerLifecycle: Record<string, number>;
  peakRssMiB: Record<string, number>;
  hwmMiB: Record<string, number>;
  upstreamCallsPerLifecycle: Record<string, number>;
  latencyMs: Record<string, Summary>;
}

interface Machine {
  cpus: number;
  model: string;
  memoryGiB: number;
  node: string;
  postgres: string;
  redis: string;
  pgbench: string;
}

async function describeMachine(probe: PgProbe, redisUrl: string): Promise<Machine> {
  let pgbench = 'unknown';
  try {
    pgbench = execFileSync('pgbench', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  return {
    cpus: cpus().length,
    model: cpus()[0]?.model ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    postgres: (await probe.versions()).server,
    redis: await redisVersion(redisUrl),
    pgbench,
  };
}

/** One point over HTTP: a measured window around N lifecycles at `clients`. */
async function measureHttp(
  stack: Stack,
  probe: PgProbe,
  o: { n: number; clients: number; pollMs: number; pollQuery: string; tag: string; topology: string },
): Promise<HttpPoint> {
  const fixed: Record<string, number[]> = {
    api: stack.apis.map((c) => c.pid),
    worker: stack.workers.map((c) => c.pid),
    ...(stack.redisPid === undefined ? {} : { redis: [stack.redisPid] }),
    client: [process.pid],
  };
  const upstreamBefore = countUpstream(stack);
  const token = await stack.token();
  const providerBefore = await probe.providerWrites('public');
  const window = await openWindow(probe, { fixed, postgres: true });
  const run = await driveHttp({
    apiUrls: stack.apiUrls,
    token,
    n: o.n,
    clients: o.clients,
    pollMs: o.pollMs,
    pollQuery: o.pollQuery,
    tag: o.tag,
    label: `http ${o.topology} c=${o.clients}`,
  });
  const measured = await window.stop();
  const providerWrites = (await probe.providerWrites('public')) - providerBefore;
  const upstreamAfter = countUpstream(stack);
  const done = Math.max(1, run.completed);
  const perLifecycle = (value: number) => round(value / done, 2);
  const upstream: Record<string, number> = {};
  for (const [service, count] of Object.entries(upstreamAfter)) {
    upstream[service] = perLifecycle(count - (upstreamBefore[service] ?? 0));
  }
  return {
    variant: 'http',
    topology: o.topology,
    clients: o.clients,
    n: o.n,
    completed: run.completed,
    failed: run.failed,
    errors: run.errors,
    wallMs: round(run.wallMs),
    lifecyclesPerSecond: round(run.completed / (run.wallMs / 1000), 2),
    writeTransactionsPerLifecycle: perLifecycle(measured.writeTransactions),
    controlPlaneWriteTransactionsPerLifecycle: perLifecycle(measured.writeTransactions - providerWrites),
    writeCommitsPerSecond: round(measured.writeTransactions / (run.wallMs / 1000), 1),
    otherDatabaseCommits: measured.otherDatabaseCommits,
    requestsPerLifecycle: perLifecycle(run.requests),
    inspectionsPerLifecycle: perLifecycle(run.inspections),
    cpuMsPerLifecycle: Object.fromEntries(
      Object.entries(measured.cpuMs).map(([k, v]) => [k, perLifecycle(v)]),
    ),
    peakRssMiB: Object.fromEntries(
      Object.entries(measured.peakRssKiB).map(([k, v]) => [k, round(v / 1024, 1)]),
    ),
    hwmMiB: Object.fromEntries(Object.entries(measured.hwmKiB).map(([k, v]) => [k, round(v / 1024, 1)])),
    upstreamCallsPerLifecycle: upstream,
    latencyMs: run.samples.summaries(),
  };
}

function countUpstream(stack: Stack): Record<string, number> {
  const counts: Record<string, number> = { projects: 0, selection: 0, jwks: 0, unexpected: 0 };
  for (const request of stack.fake.requests) counts[request.service] = (counts[request.service] ?? 0) + 1;
  counts['total'] = stack.fake.requests.length;
  return counts;
}

/** A stack with `apis` and `workers` processes, warmed up, measured at each client count. */
async function httpSeries(
  o: BenchOptions,
  deps: { database: BenchDatabase; entry: Entry; probe: PgProbe },
  topology: { apis: number; workers: number },
  clientCounts: number[],
  tag: string,
  /** Runs on the same stack after the points, before it is stopped. */
  after?: (stack: Stack) => Promise<void>,
): Promise<HttpPoint[]> {
  const name = `${plural(topology.apis, 'API')} + ${plural(topology.workers, 'worker')}`;
  status(`starting ${name} (${deps.entry.kind})`);
  const stack = await startStack({
    database: deps.database,
    entry: deps.entry,
    redisUrl: o.redisUrl,
    logLevel: o.logLevel,
    ...topology,
  });
  try {
    // Warm-up (JIT, connection pools, JWKS fetch), not measured.
    await driveHttp({
      apiUrls: stack.apiUrls,
      token: await stack.token(),
      n: Math.min(o.warmup, o.n),
      clients: 4,
      pollMs: o.pollMs,
      pollQuery: o.pollQuery,
      tag: `${tag}-warm`,
      label: `http ${name} warm-up`,
    });
    const points: HttpPoint[] = [];
    for (const clients of clientCounts) {
      points.push(
        await measureHttp(stack, deps.probe, {
          n: o.n,
          clients,
          pollMs: o.pollMs,
          pollQuery: o.pollQuery,
          tag: `${tag}-c${clients}`,
          topology: name,
        }),
      );
    }
    await after?.(stack);
    return points;
  } finally {
    await stack.close();
  }
}

interface Results {
  startedAt: string;
  finishedAt?: string;
  options: BenchOptions;
  machine: Machine;
  /** Load average (1, 5, 15 min) at the start and at the end: other work on the machine. */
  loadAverage: { start: number[]; end?: number[] };
  entry: string;
  http: HttpPoint[];
  pgLimit: PgLimitPoint[];
  engine: EnginePoint[];
  scale: { clients: number; workers: HttpPoint[]; apis: HttpPoint[]; ratios: Record<string, number> };
  tables: { inProcess: TableScaleResult | null; idle: IdleResult | null };
  peers: PeersOutcome | null;
  /** Where one lifecycle's time goes, step by step (bench/lib/timeline.ts). */
  timeline: TimelineResult | null;
  /** Observation at scale (bench/lib/observe.ts). */
  observation: ObservationResult | null;
  /** Tables over a day of lifecycles (bench/lib/retention.ts). */
  retention: RetentionResult | null;
  ratios: Ratio[];
  targets: Target[];
  notes: string[];
}

/** One line of the "Ratios" table: a value, or why there is none. */
interface Ratio {
  name: string;
  value: number | string | null;
  why?: string;
}

function pgRatio(limit: PgLimitPoint[], clients: number, commitsPerSecond: number): number {
  const tps = limit.find((p) => p.clients === clients)?.tps;
  return tps === undefined || !(tps > 0) ? Number.NaN : round(commitsPerSecond / tps, 3);
}

const cell = (value: number | string | undefined): string | number =>
  value === undefined || (typeof value === 'number' && Number.isNaN(value)) ? '-' : value;

function printReport(r: Results): void {
  const out: string[] = [];
  const m = r.machine;
  out.push(
    '',
    `Machine: ${m.cpus} × ${m.model}, ${m.memoryGiB} GiB; Node ${m.node}, PostgreSQL ${m.postgres}, Redis ${m.redis}`,
    `Load average at start: ${r.loadAverage.start.join(' / ')}${r.loadAverage.end === undefined ? '' : `, at end: ${r.loadAverage.end.join(' / ')}`} (other work on the machine shows here)`,
  );
  out.push(`Children: ${r.entry}`, '');
  const httpRow = (p: HttpPoint) => [
    p.topology,
    p.clients,
    `${p.completed}/${p.n}`,
    p.lifecyclesPerSecond,
    p.writeTransactionsPerLifecycle,
    p.controlPlaneWriteTransactionsPerLifecycle,
    cell(p.cpuMsPerLifecycle['api']),
    cell(p.cpuMsPerLifecycle['worker']),
    cell(p.cpuMsPerLifecycle['postgres']),
    cell(p.cpuMsPerLifecycle['redis']),
    cell(p.cpuMsPerLifecycle['client']),
    cell(p.peakRssMiB['api']),
    cell(p.peakRssMiB['worker']),
    cell(p.upstreamCallsPerLifecycle['total']),
    p.requestsPerLifecycle,
    cell(pgRatio(r.pgLimit, p.clients, p.writeCommitsPerSecond)),
  ];
  const httpHeaders = [
    'HTTP (production mode)',
    'clients',
    'done',
    'lifecycles/s',
    'write tx/lc',
    'control-plane tx/lc',
    'API ms/lc',
    'worker ms/lc',
    'PG ms/lc',
    'Redis ms/lc',
    'client ms/lc',
    'API RSS MiB',
    'worker RSS MiB',
    'upstream/lc',
    'requests/lc',
    'ratio_to_pg_limit',
  ];
  out.push(table(httpHeaders, r.http.map(httpRow)), '');
  for (const p of r.http) {
    out.push(`Latency ms, HTTP, ${p.topology}, ${plural(p.clients, 'client')}`);
    out.push(table(['series', 'n', 'p50', 'p95', 'p99', 'max'], latencyRows(p.latencyMs)), '');
  }
  if (r.pgLimit.length > 0) {
    out.push(
      table(
        ['pgbench (lock + read + CAS update + outbox insert)', 'clients', 'tps'],
        r.pgLimit.map((p) => [`${p.seconds} s`, p.clients, round(p.tps, 0)]),
      ),
      '',
    );
  }
  if (r.engine.length > 0) {
    out.push(
      table(
        [
          'engine only (in-process)',
          'clients',
          'done',
          'lifecycles/s',
          'write tx/lc',
          'control-plane tx/lc',
          'engine ms/lc',
          'PG ms/lc',
          'ratio_to_pg_limit',
        ],
        r.engine.map((p) => [
          'services + in-process workers',
          p.clients,
          `${p.completed}/${p.n}`,
          p.lifecyclesPerSecond,
          p.writeTransactionsPerLifecycle,
          p.controlPlaneWriteTransactionsPerLifecycle,
          p.cpuMsPerLifecycle.engine,
          p.cpuMsPerLifecycle.postgres,
          cell(pgRatio(r.pgLimit, p.clients, p.writeCommitsPerSecond)),
        ]),
      ),
      '',
    );
    for (const p of r.engine) {
      out.push(`Latency ms, engine only, ${plural(p.clients, 'client')}`);
      out.push(table(['series', 'n', 'p50', 'p95', 'p99', 'max'], latencyRows(p.latencyMs)), '');
    }
  }
  const scaled = [...r.scale.workers, ...r.scale.apis];
  if (scaled.length > 0) out.push('Scale', table(httpHeaders, scaled.map(httpRow)), '');
  const t = r.tables.inProcess;
  if (t !== null) {
    out.push(
      `1k vs 100k Environments, in-process actor protocol (bench/scale.ts: ${t.clients} clients, ${t.events} transitions per round, median of 3)`,
      table(
        ['Environments in the tables', 'transitions/s', 'ms/transition', 'rounds (ms/transition)'],
        [t.small, t.large].map((p) => [
          p.environments,
          p.transitionsPerSecond,
          p.msPerTransition,
          p.rounds.join(' '),
        ]),
      ),
      `cost ratio ${t.costRatio}; fill ${t.fillSeconds} s; bench process RSS ${t.rssMiBBefore} → ${t.rssMiBAfter} MiB`,
      '',
    );
  }
  const idle = r.tables.idle;
  if (idle !== null) {
    out.push(
      'Idle Environments: one `sandlot serve` child (1 API + 1 worker), reads of idle Environments then lifecycles over HTTP',
      table(
        [
          'Environments in the tables',
          'idle reads',
          'distinct',
          'read ms',
          'lifecycles/s',
          'API ms/lc',
          'worker ms/lc',
          'PG ms/lc',
          'API VmRSS MiB',
          'API VmHWM MiB',
        ],
        [idle.small, idle.large].map((p) => [
          p.environments,
          p.reads,
          p.distinctRead,
          p.readMsPerRequest,
          p.lifecyclesPerSecond,
          cell(p.cpuMsPerLifecycle['api']),
          cell(p.cpuMsPerLifecycle['worker']),
          cell(p.cpuMsPerLifecycle['postgres']),
          p.apiRssMiB,
          p.apiHwmMiB,
        ]),
      ),
      `API RSS added ${idle.apiRssMiBAdded} MiB; lifecycle cost ratio ${idle.lifecycleCostRatio} (lifecycles/s), ${idle.cpuCostRatio} (CPU); ` +
        `fill ${idle.fillSeconds} s (${Object.entries(idle.copiedRows)
          .filter(([, n]) => n > 0)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ')})`,
      ...[idle.small, idle.large].map(
        (p) =>
          `rows read by sequential scans during the ${p.environments} phase: ${
            Object.entries(p.seqTuplesRead)
              .slice(0, 4)
              .map(([table, n]) => `${table} ${n}`)
              .join(', ') || 'none'
          }`,
      ),
      '',
    );
  }
  if (r.peers !== null) {
    if (r.peers.install !== undefined) out.push(`Peers: ${r.peers.install}`);
    for (const line of r.peers.skipped) out.push(`peers skipped: ${line}`);
    if (r.peers.points.length > 0) {
      out.push(
        table(
          ['peer', 'variant', 'clients', 'lifecycles/s'],
          r.peers.points.map((p) => [p.peer, p.variant, p.clients, round(p.lifecyclesPerSecond, 1)]),
        ),
      );
    }
    out.push('');
  }
  if (r.timeline !== null) {
    out.push(
      `Step timeline: ${r.timeline.lifecycles} lifecycles over HTTP, 1 client, 1 API + 1 worker; the median one, step by step (ms)`,
    );
    for (const s of r.timeline.segments) {
      out.push(
        `${s.name}: p50 ${cell(s.p50Ms)}, p99 ${cell(s.p99Ms)}`,
        table(
          ['at', '+', 'process', 'step'],
          s.steps.map((x) => [x.atMs.toFixed(2), x.sinceMs.toFixed(2), x.role, x.step]),
        ),
        '',
      );
    }
  }
  out.push('Ratios');
  out.push(
    table(
      ['ratio', 'value', 'note'],
      r.ratios.map((x) => [x.name, x.value === null ? '-' : x.value, x.why ?? '']),
    ),
    '',
  );
  if (r.observation !== null) {
    out.push('Observation at scale (bench/lib/observe.ts)');
    printObservation([r.observation], (line) => out.push(line));
    out.push('');
  }
  if (r.retention !== null) {
    out.push('Tables over a day of lifecycles, pruned after each round (bench/lib/retention.ts)');
    printRetention(r.retention, (line) => out.push(line));
    out.push('');
  }
  out.push('Targets (issue E15, with the three of E9 it does not restate)');
  out.push(
    table(
      ['target', 'measured', 'met'],
      r.targets.map((x) => [x.target, x.measured, x.met]),
    ),
  );
  for (const note of r.notes) out.push(`note: ${note}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

/** Every ratio the report promises, each with its value or why it has none. */
function ratios(r: Results, o: BenchOptions): Ratio[] {
  const list: Ratio[] = [];
  const missing = (why: string) => ({ value: null, why });
  for (const variant of ['http', 'engine'] as const) {
    const points: Array<HttpPoint | EnginePoint> = variant === 'http' ? r.http : r.engine;
    for (const clients of o.clients) {
      const name = `ratio_to_pg_limit, ${variant}, ${plural(clients, 'client')}`;
      const p = points.find((x) => x.clients === clients);
      const value = p === undefined ? Number.NaN : pgRatio(r.pgLimit, clients, p.writeCommitsPerSecond);
      if (!Number.isNaN(value)) list.push({ name, value });
      else if (!o.pgbench) list.push({ name, ...missing('--no-pgbench') });
      else if (variant === 'engine' && !o.engine) list.push({ name, ...missing('--no-engine') });
      else list.push({ name, ...missing('no point or no pgbench tps (see above)') });
    }
  }
  for (const peer of ['dbos', 'restate']) {
    for (const variant of ['http', 'engine'] as const) {
      for (const clients of o.clients) {
        const name = `Sandlot / ${peer === 'dbos' ? 'DBOS' : 'Restate'}, ${variant}, ${plural(clients, 'client')}`;
        const ours = (variant === 'engine' ? r.engine : r.http).find((p) => p.clients === clients);
        const theirs = r.peers?.points.find(
          (p) => p.peer === peer && p.variant === variant && p.clients === clients,
        );
        if (ours !== undefined && theirs !== undefined && theirs.lifecyclesPerSecond > 0) {
          list.push({ name, value: round(ours.lifecyclesPerSecond / theirs.lifecyclesPerSecond, 3) });
        } else if (!o.peers) list.push({ name, ...missing('--no-peers') });
        else if (ours === undefined) list.push({ name, ...missing(`no Sandlot ${variant} point`) });
        else {
          const why = r.peers?.skipped.find((line) => line.startsWith(`${peer}:`) || !/^\w+:/.test(line));
          const all = r.peers?.skipped.find((line) => line.startsWith('all:') || line.startsWith('install:'));
          list.push({ name, ...missing(`peers skipped: ${all ?? why ?? 'no such peer point'}`) });
        }
      }
    }
  }
  const scaleWhy = o.scale ? 'scale run failed (see notes)' : '--no-scale';
  for (const [label, key] of [
    ['2 workers / 1 worker', 'workers'],
    ['2 API processes / 1 (round robin)', 'apis'],
  ] as const) {
    const name = `${label}, lifecycles/s, ${r.scale.clients} clients`;
    const value = r.scale.ratios[key];
    list.push(value === undefined || Number.isNaN(value) ? { name, ...missing(scaleWhy) } : { name, value });
  }
  const tablesWhy = o.tables ? 'failed (see notes)' : '--no-tables';
  const large = `${o.large / 1000}k`;
  const small = `${o.small / 1000}k`;
  const t = r.tables.inProcess;
  list.push(
    t === null
      ? { name: `transition cost ${large} / ${small}, in-process`, ...missing(tablesWhy) }
      : { name: `transition cost ${large} / ${small}, in-process`, value: t.costRatio },
  );
  const idle = r.tables.idle;
  if (idle === null) {
    list.push({ name: `lifecycle cost ${large} / ${small}, HTTP (wall)`, ...missing(tablesWhy) });
    list.push({ name: `lifecycle cost ${large} / ${small}, HTTP (CPU)`, ...missing(tablesWhy) });
    list.push({ name: `API process RSS ${small} → ${large} idle, MiB`, ...missing(tablesWhy) });
  } else {
    list.push({ name: `lifecycle cost ${large} / ${small}, HTTP (wall)`, value: idle.lifecycleCostRatio });
    list.push({ name: `lifecycle cost ${large} / ${small}, HTTP (CPU)`, value: idle.cpuCostRatio });
    list.push({
      name: `API process RSS ${small} → ${large} idle, MiB`,
      value: `${idle.small.apiRssMiB} → ${idle.large.apiRssMiB} (${idle.apiRssMiBAdded >= 0 ? '+' : ''}${idle.apiRssMiBAdded})`,
    });
  }
  return list;
}

/** The issue's targets against this run (bench/lib/targets.ts). */
function targets(r: Results, o: BenchOptions): Target[] {
  const skipped: Record<string, string> = {};
  if (!o.clients.includes(1)) skipped['http1'] = '(no 1-client point: --clients)';
  if (o.observeLeases === 0) skipped['observation'] = '(--no-observe)';
  if (o.retentionRounds === 0) skipped['retention'] = '(--no-retention)';
  return e15Targets({
    http: r.http,
    engine: r.engine,
    pgRatio: (clients, commits) => pgRatio(r.pgLimit, clients, commits),
    ratios: r.ratios,
    observation: r.observation,
    retention: r.retention,
    workersRatio: r.scale.ratios['workers'],
    tableCosts: [
      r.tables.inProcess?.costRatio,
      r.tables.idle?.lifecycleCostRatio,
      r.tables.idle?.cpuCostRatio,
    ],
    idleRssMiBAdded: r.tables.idle?.apiRssMiBAdded,
    failedPhases,
    skipped,
  });
}

/** The phases that failed in this run: the bench reports them at the end and exits 1. */
const failedPhases: string[] = [];

/**
 * Runs `step`; a failure becomes a note and `fallback`, so one broken part never hides the rest,
 * and is counted in `failedPhases`, so the run still ends in failure naming it.
 */
async function attempt<T>(notes: string[], what: string, fallback: T, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    notes.push(`${what} failed: ${message.split('\n').slice(0, 3).join(' | ')}`);
    status(`${what} failed: ${message.split('\n')[0] ?? ''}`);
    failedPhases.push(what);
    return fallback;
  }
}

const load = () => loadavg().map((x) => round(x, 2));

export async function main(argv: string[]): Promise<void> {
  const parsed = parseOptions(argv);
  if (parsed === 'help') {
    process.stdout.write(usage);
    return;
  }
  const o = parsed;
  const startedAt = new Date();
  const notes: string[] = [];
  // The peers' install (when missing) runs beside the build, before anything is measured, so that
  // npm's work never overlaps a measured point; if it fails, the peers are skipped, nothing else.
  let peersInstall: string | undefined;
  let peersUnavailable: string | undefined;
  const installing = o.peers
    ? ensurePeersInstalled().then(
        (note) => {
          peersInstall = note;
        },
        (error: unknown) => {
          peersUnavailable = `install: ${error instanceof Error ? error.message : String(error)}`;
          status(`peers skipped: ${peersUnavailable}`);
        },
      )
    : Promise.resolve();
  const entry = await prepareEntry(o.entry);
  await installing;
  const server = o.privatePostgres ? await startPrivatePostgres() : undefined;
  if (server !== undefined) status(`private PostgreSQL at ${server.url}`);
  const database = await createBenchDatabase(server?.url);
  status(`database ${database.name}`);
  const probe = await openProbe(database);
  const scaleClients = o.clients.includes(8) ? 8 : (o.clients.at(-1) ?? 8);
  const results: Results = {
    startedAt: startedAt.toISOString(),
    options: o,
    machine: await describeMachine(probe, o.redisUrl),
    loadAverage: { start: load() },
    entry: entry.note,
    http: [],
    pgLimit: [],
    engine: [],
    scale: { clients: scaleClients, workers: [], apis: [], ratios: {} },
    tables: { inProcess: null, idle: null },
    peers: null,
    timeline: null,
    observation: null,
    retention: null,
    ratios: [],
    targets: [],
    notes,
  };
  try {
    const deps = { database, entry, probe };
    // Order: what needs no stack first, then the scale stacks, then the main 1 API + 1 worker series,
    // whose stack then serves the 1k vs 100k idle measurement (it fills the database, so it comes
    // last among the HTTP runs). The scale ratios divide by the main series' point at 8 clients.
    if (o.pgbench) {
      status(`pgbench: ${o.clients.join(', ')} clients, ${o.pgbenchSeconds} s each`);
      results.pgLimit = await attempt(notes, 'pgbench', [], () =>
        measurePgLimit(database.url, o.clients, o.pgbenchSeconds),
      );
    }
    if (o.engine) {
      results.engine = await attempt(notes, 'engine-only', [], () =>
        runEngineOnly({
          n: o.n,
          clients: o.clients,
          pollMs: o.pollMs,
          // Long-polling like the HTTP client, unless it was told to poll (`--poll-query ''`).
          waitMs: o.pollQuery === '' ? 0 : 10_000,
          warmup: o.warmup,
          database,
        }),
      );
    }
    if (o.observeLeases > 0) {
      results.observation = await attempt(notes, 'observation at scale', null, () =>
        runObservation({
          leases: o.observeLeases,
          windowS: o.observeWindowS,
          finish: o.quick ? 50 : 100,
          database,
        }),
      );
    }
    if (o.retentionRounds > 0) {
      results.retention = await attempt(notes, 'tables over a day', null, () =>
        runRetention({ rounds: o.retentionRounds, perRound: o.retentionPerRound, database }),
      );
    }
    if (o.tables) {
      status(`1k vs 100k, in-process (bench/scale.ts): ${o.small} then ${o.large} Environments`);
      results.tables.inProcess = await attempt(notes, 'in-process 1k vs 100k', null, () =>
        measureTableScale({
          url: database.url,
          small: o.small,
          large: o.large,
          clients: 8,
          events: o.tableEvents,
          touches: o.quick ? 500 : 2_000,
          log: (line) => status(`in-process: ${line}`),
        }),
      );
    }
    if (o.scale) {
      results.scale.workers = await attempt(notes, '1 API + 2 workers', [], () =>
        httpSeries(o, deps, { apis: 1, workers: 2 }, [scaleClients], 'w2'),
      );
      results.scale.apis = await attempt(notes, '2 APIs + 1 worker', [], () =>
        httpSeries(o, deps, { apis: 2, workers: 1 }, [scaleClients], 'a2'),
      );
    }
    if (o.timeline) {
      results.timeline = await attempt(notes, 'step timeline', null, () =>
        measureTimeline({
          database,
          entry,
          redisUrl: o.redisUrl,
          logLevel: o.logLevel,
          pollQuery: o.pollQuery,
          pollMs: o.pollMs,
          n: o.quick ? 20 : 50,
          warmup: o.warmup,
        }),
      );
    }
    results.http = await httpSeries(o, deps, { apis: 1, workers: 1 }, o.clients, 'h1', async (stack) => {
      if (!o.tables) return;
      results.tables.idle = await attempt(notes, 'idle Environments (API RSS)', null, () =>
        measureIdleEnvironments(stack, database, probe, {
          small: o.small,
          large: o.large,
          reads: o.idleReads,
          n: o.n,
          clients: scaleClients,
          pollMs: o.pollMs,
          releasedShare: o.idleReleasedShare,
        }),
      );
    });
    if (o.scale) {
      const base = results.http.find((p) => p.clients === scaleClients);
      const ratio = (points: HttpPoint[]) =>
        base === undefined || points[0] === undefined
          ? Number.NaN
          : round(points[0].lifecyclesPerSecond / base.lifecyclesPerSecond, 3);
      results.scale.ratios['workers'] = ratio(results.scale.workers);
      results.scale.ratios['apis'] = ratio(results.scale.apis);
    }
    if (o.peers) {
      if (peersUnavailable !== undefined) {
        results.peers = { points: [], skipped: [peersUnavailable] };
      } else {
        status('peers: DBOS and Restate (bench/peers/run.ts)');
        results.peers = await runPeersForBench({
          n: o.n,
          clients: o.clients,
          quick: o.quick,
          warmup: o.quick ? 5 : 100,
          ...(server === undefined
            ? {}
            : {
                postgres: {
                  host: '127.0.0.1',
                  port: server.port,
                  user: 'postgres',
                  socketDir: server.socketDir,
                },
              }),
        });
        if (peersInstall !== undefined) results.peers.install = peersInstall;
      }
      if (server === undefined) {
        notes.push('the peers ran on the shared PostgreSQL at 127.0.0.1:5432, as Sandlot did');
      } else {
        notes.push("the peers ran on the bench's private PostgreSQL, as Sandlot did");
      }
    }
    const contaminated = [...results.http, ...results.engine].filter((p) => p.otherDatabaseCommits > 0);
    if (contaminated.length > 0) {
      notes.push(
        `other databases committed during ${contaminated.length} point(s) (up to ${Math.max(...contaminated.map((p) => p.otherDatabaseCommits))} commits): ` +
          'write transactions per lifecycle and PostgreSQL CPU may include their work' +
          (server === undefined
            ? ' (--private-postgres avoids it)'
            : " (on the private cluster: its own maintenance, autovacuum and the bench's admin connections)"),
      );
    }
    results.ratios = ratios(results, o);
    results.targets = targets(results, o);
    results.loadAverage.end = load();
    results.finishedAt = new Date().toISOString();
    printReport(results);
    const dir = join(repoRoot, 'bench', 'results');
    await mkdir(dir, { recursive: true });
    const file = join(
      dir,
      `${startedAt
        .toISOString()
        .replace(/:/g, '-')
        .replace(/\.\d+Z$/, 'Z')}.json`,
    );
    await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
    status(`results in ${file}; ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s in all`);
    for (const why of results.peers?.skipped ?? []) failedPhases.push(`peers (${why})`);
    if (failedPhases.length > 0) {
      throw new Error(
        `${failedPhases.length} phase(s) failed: ${failedPhases.join('; ')} (see the notes above)`,
      );
    }
  } finally {
    await probe.close();
    if (o.keepDatabase) status(`kept database ${database.name}`);
    else await database.drop();
    await server?.stop();
    await entry.cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // Exit when done: a handle left open by a library must not keep a finished bench alive. After a
  // signal, the clean-up (bench/lib/interrupt.ts) exits instead, and what failed meanwhile is moot.
  const flow = main(process.argv.slice(2));
  interruptible(flow);
  flow.then(
    () => {
      if (!isInterrupted()) process.exit(0);
    },
    (error: unknown) => {
      if (isInterrupted()) return;
      process.stderr.write(
        `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
