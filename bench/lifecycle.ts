// The lifecycle benchmark (`npm run bench`, `npm run bench -- --quick`; never part of `npm test`).
// It starts everything itself on 127.0.0.1: a throw-away database `bench_<time>`, a unique BullMQ
// prefix on Redis, stand-ins for the JWKS (ES256), Projects and run selection, then `sandlot serve
// --no-workers` and `sandlot worker` as child processes in production mode. N Environments per point
// go register → Workspace volume → provision → inspect until readyForDispatch → release → Released
// over real HTTP, at each client count. Per point it prints lifecycles/s, latency percentiles per
// route and span, write transactions per lifecycle (transaction-ID delta), CPU ms per lifecycle of
// the API, worker, PostgreSQL and Redis processes, peak RSS and upstream calls per lifecycle.
// In the same run: the PostgreSQL limit (pgbench on a transaction of the same shape, giving
// ratio_to_pg_limit), the engine-only variant (bench/lib/engine.ts), 1 vs 2 workers and 1 vs 2 API
// processes, and the peers (bench/peers/run.ts, when present). Results go to bench/results/. See
// docs/performance.md.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../test/support/chaos-worker.ts';
import { runEngineOnly, type EnginePoint } from './lib/engine.ts';
import { driveHttp } from './lib/http-driver.ts';
import { parseOptions, usage, type BenchOptions } from './lib/options.ts';
import { runPeersIfPresent, type PeersOutcome } from './lib/peers.ts';
import { measurePgLimit, type PgLimitPoint } from './lib/pg-limit.ts';
import { createBenchDatabase, openProbe, type BenchDatabase, type PgProbe } from './lib/postgres.ts';
import { status } from './lib/progress.ts';
import { startPrivatePostgres } from './lib/private-postgres.ts';
import { latencyRows, table } from './lib/report.ts';
import { prepareEntry, redisVersion, startStack, type Entry, type Stack } from './lib/stack.ts';
import { round, type Summary } from './lib/stats.ts';
import { openWindow } from './lib/window.ts';

export { runEngineOnly } from './lib/engine.ts';

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
): Promise<HttpPoint[]> {
  const name = `${topology.apis} API + ${topology.workers} worker${topology.workers === 1 ? '' : 's'}`;
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
      n: Math.min(20, o.n),
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
    return points;
  } finally {
    await stack.close();
  }
}

interface Results {
  startedAt: string;
  options: BenchOptions;
  machine: Machine;
  entry: string;
  http: HttpPoint[];
  pgLimit: PgLimitPoint[];
  engine: EnginePoint[];
  scale: { workers: HttpPoint[]; apis: HttpPoint[]; ratios: Record<string, number> };
  peers: PeersOutcome | null;
  ratios: Record<string, number>;
  notes: string[];
}

function pgRatio(limit: PgLimitPoint[], clients: number, commitsPerSecond: number): number {
  const tps = limit.find((p) => p.clients === clients)?.tps;
  return tps === undefined || !(tps > 0) ? Number.NaN : round(commitsPerSecond / tps, 3);
}

function printReport(r: Results): void {
  const out: string[] = [];
  const m = r.machine;
  out.push(
    '',
    `Machine: ${m.cpus} × ${m.model}, ${m.memoryGiB} GiB; Node ${m.node}, PostgreSQL ${m.postgres}, Redis ${m.redis}`,
  );
  out.push(`Children: ${r.entry}`, '');
  const httpRow = (p: HttpPoint) => [
    p.topology,
    p.clients,
    `${p.completed}/${p.n}`,
    p.lifecyclesPerSecond,
    p.writeTransactionsPerLifecycle,
    p.cpuMsPerLifecycle['api'] ?? '-',
    p.cpuMsPerLifecycle['worker'] ?? '-',
    p.cpuMsPerLifecycle['postgres'] ?? '-',
    p.cpuMsPerLifecycle['redis'] ?? '-',
    p.cpuMsPerLifecycle['client'] ?? '-',
    p.peakRssMiB['api'] ?? '-',
    p.peakRssMiB['worker'] ?? '-',
    p.upstreamCallsPerLifecycle['total'] ?? '-',
    p.requestsPerLifecycle,
    pgRatio(r.pgLimit, p.clients, p.writeCommitsPerSecond),
  ];
  const httpHeaders = [
    'HTTP (production mode)',
    'clients',
    'done',
    'lifecycles/s',
    'write tx/lc',
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
    out.push(`Latency ms, HTTP, ${p.topology}, ${p.clients} clients`);
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
          p.cpuMsPerLifecycle.engine,
          p.cpuMsPerLifecycle.postgres,
          pgRatio(r.pgLimit, p.clients, p.writeCommitsPerSecond),
        ]),
      ),
      '',
    );
    for (const p of r.engine) {
      out.push(`Latency ms, engine only, ${p.clients} clients`);
      out.push(table(['series', 'n', 'p50', 'p95', 'p99', 'max'], latencyRows(p.latencyMs)), '');
    }
  }
  const scaled = [...r.scale.workers, ...r.scale.apis];
  if (scaled.length > 0) out.push('Scale', table(httpHeaders, scaled.map(httpRow)), '');
  if (r.peers !== null) {
    if (r.peers.note !== undefined) out.push(`Peers: ${r.peers.note}`);
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
  out.push('Ratios');
  out.push(
    table(
      ['ratio', 'value'],
      Object.entries(r.ratios).map(([k, v]) => [k, Number.isNaN(v) ? '-' : v]),
    ),
  );
  for (const note of r.notes) out.push(`note: ${note}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

function ratios(r: Results): Record<string, number> {
  const result: Record<string, number> = {};
  for (const p of r.http) {
    result[`http c=${p.clients} ratio_to_pg_limit`] = pgRatio(r.pgLimit, p.clients, p.writeCommitsPerSecond);
  }
  for (const p of r.engine) {
    result[`engine c=${p.clients} ratio_to_pg_limit`] = pgRatio(
      r.pgLimit,
      p.clients,
      p.writeCommitsPerSecond,
    );
  }
  Object.assign(result, r.scale.ratios);
  const ours = (variant: string, clients: number) =>
    (variant === 'engine' ? r.engine : r.http).find((p) => p.clients === clients)?.lifecyclesPerSecond;
  for (const peer of r.peers?.points ?? []) {
    const variant = /engine/i.test(peer.variant) ? 'engine' : 'http';
    const mine = ours(variant, peer.clients);
    if (mine !== undefined && peer.lifecyclesPerSecond > 0) {
      result[`${variant} c=${peer.clients} sandlot/${peer.peer}`] = round(mine / peer.lifecyclesPerSecond, 3);
    }
  }
  return result;
}

export async function main(argv: string[]): Promise<void> {
  const parsed = parseOptions(argv);
  if (parsed === 'help') {
    process.stdout.write(usage);
    return;
  }
  const o = parsed;
  const startedAt = new Date();
  const notes: string[] = [];
  const entry = await prepareEntry(o.entry);
  const server = o.privatePostgres ? await startPrivatePostgres() : undefined;
  if (server !== undefined) status(`private PostgreSQL at ${server.url}`);
  const database = await createBenchDatabase(server?.url);
  status(`database ${database.name}`);
  const probe = await openProbe(database);
  const results: Results = {
    startedAt: startedAt.toISOString(),
    options: o,
    machine: await describeMachine(probe, o.redisUrl),
    entry: entry.note,
    http: [],
    pgLimit: [],
    engine: [],
    scale: { workers: [], apis: [], ratios: {} },
    peers: null,
    ratios: {},
    notes,
  };
  try {
    const deps = { database, entry, probe };
    results.http = await httpSeries(o, deps, { apis: 1, workers: 1 }, o.clients, 'h1');
    if (o.pgbench) {
      status(`pgbench: ${o.clients.join(', ')} clients, ${o.pgbenchSeconds} s each`);
      results.pgLimit = await measurePgLimit(database.url, o.clients, o.pgbenchSeconds);
    }
    if (o.engine)
      results.engine = await runEngineOnly({ n: o.n, clients: o.clients, pollMs: o.pollMs, database });
    if (o.scale) {
      const clients = o.clients.includes(8) ? 8 : (o.clients.at(-1) ?? 8);
      const base = results.http.find((p) => p.clients === clients);
      results.scale.workers = await httpSeries(o, deps, { apis: 1, workers: 2 }, [clients], 'w2');
      results.scale.apis = await httpSeries(o, deps, { apis: 2, workers: 1 }, [clients], 'a2');
      const two = (points: HttpPoint[]) => points[0]?.lifecyclesPerSecond ?? Number.NaN;
      if (base !== undefined) {
        results.scale.ratios[`c=${clients} 2 workers / 1`] = round(
          two(results.scale.workers) / base.lifecyclesPerSecond,
          3,
        );
        results.scale.ratios[`c=${clients} 2 APIs / 1`] = round(
          two(results.scale.apis) / base.lifecyclesPerSecond,
          3,
        );
      }
    } else {
      notes.push('scale runs (1 vs 2 workers, 1 vs 2 APIs) skipped; run without --quick or with --scale');
    }
    notes.push(
      'per-transition cost with 1k vs 100k Environments and API RSS with 100k: not measured yet (TODO, docs/performance.md)',
    );
    if (o.peers) {
      status('peers (bench/peers/run.ts)');
      results.peers = await runPeersIfPresent({ n: o.n, clients: o.clients, quick: o.quick });
    }
    const contaminated = [...results.http, ...results.engine].filter((p) => p.otherDatabaseCommits > 0);
    if (contaminated.length > 0) {
      notes.push(
        `other databases committed during ${contaminated.length} point(s) (up to ${Math.max(...contaminated.map((p) => p.otherDatabaseCommits))} commits): ` +
          'write transactions per lifecycle and PostgreSQL CPU may include their work',
      );
    }
    results.ratios = ratios(results);
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
    status(`results in ${file}`);
  } finally {
    await probe.close();
    if (o.keepDatabase) status(`kept database ${database.name}`);
    else await database.drop();
    await server?.stop();
    await entry.cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
