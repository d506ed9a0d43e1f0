// Command-line options of `npm run bench` (bench/lifecycle.ts). `--quick` picks small defaults that
// finish in under 3 minutes on a 2-core machine; any explicit option still wins over them.
import { parseArgs } from 'node:util';

export interface BenchOptions {
  quick: boolean;
  n: number;
  clients: number[];
  pollMs: number;
  pollQuery: string;
  /** Unmeasured lifecycles before each series (a stack's JIT, pools, JWKS fetch). */
  warmup: number;
  pgbenchSeconds: number;
  entry: 'dist' | 'tsx';
  logLevel: string;
  redisUrl: string;
  engine: boolean;
  pgbench: boolean;
  peers: boolean;
  scale: boolean;
  /** 1k vs 100k Environments: in-process transition cost and an API process's RSS and cost. */
  tables: boolean;
  small: number;
  large: number;
  /** Transitions per round of the in-process 1k vs 100k points (bench/scale.ts). */
  tableEvents: number;
  /** Reads of idle Environments per phase of the API RSS measurement. */
  idleReads: number;
  /** Share of the idle copies that are whole Released lifecycles (the rest: only registered). */
  idleReleasedShare: number;
  keepDatabase: boolean;
  privatePostgres: boolean;
  /** The step timeline of one lifecycle (bench/lib/timeline.ts). */
  timeline: boolean;
  /** Observation at scale (bench/lib/observe.ts): Active leases held, 0 to skip. */
  observeLeases: number;
  /** Its steady-state window, seconds. */
  observeWindowS: number;
  /** Tables over a day of lifecycles (bench/lib/retention.ts): rounds, 0 to skip. */
  retentionRounds: number;
  retentionPerRound: number;
}

export const usage = `Usage: npm run bench -- [options]

  --quick               small run (N=30, clients 1,8, pgbench 2 s, short scale and 1k/100k runs,
                        fewer reads): every ratio, in under 3 minutes on a 2-core machine
  --n N                 lifecycles per point (default 200; quick 30)
  --clients LIST        lifecycles in flight, comma-separated (default 1,8,64; quick 1,8)
  --poll-ms MS          pause between polling reads of one lifecycle (default 50)
  --poll-query Q        query of the HTTP reads that wait for a change (default wait=10s: long-poll,
                        so no polling delay of the bench's own; '' polls every --poll-ms instead)
  --pgbench-seconds S   pgbench duration per client count (default 5; quick 2)
  --entry dist|tsx      children run the compiled build (default; quick: tsx) or cli/sandlot.mjs
  --log-level LEVEL     LOG_LEVEL of the children (default info, as in production)
  --redis-url URL       default redis://127.0.0.1:6379/0
  --no-engine           skip the engine-only variant
  --no-pgbench          skip the PostgreSQL limit
  --no-peers            skip the DBOS and Restate peers (otherwise installed when missing:
                        npm ci --prefix bench/peers)
  --scale / --no-scale  1 vs 2 workers and 1 vs 2 API processes (default on, quick too)
  --no-timeline         skip the step timeline (one lifecycle's steps across the processes)
  --observe-leases N    Active leases of the observation phase (default 10000; quick 1000)
  --no-observe          skip it (a finished sandbox's retirement and the steady-state cost)
  --no-retention        skip the tables over a day of lifecycles (24 rounds of 50, pruned; quick 12 of 20)
  --no-tables           skip 1k vs 100k Environments (in-process cost; API process RSS and cost)
  --small N / --large N Environments in the tables for those (default 1000 / 100000)
  --keep-database       keep the bench_<time> database for inspection
  --private-postgres    run PostgreSQL of the bench's own (initdb in a temp dir, free port) instead
                        of 127.0.0.1:5432, so nobody else's transactions count (needs initdb/pg_ctl);
                        the peers use it too
`;

const list = (value: string): number[] => {
  const numbers = value.split(',').map((part) => Number(part.trim()));
  if (numbers.some((x) => !Number.isInteger(x) || x < 1))
    throw new Error(`expected positive integers: ${value}`);
  return numbers;
};

const positive = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} expects a non-negative number`);
  return parsed;
};

export function parseOptions(argv: string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', short: 'h' },
      quick: { type: 'boolean', default: false },
      n: { type: 'string' },
      clients: { type: 'string' },
      'poll-ms': { type: 'string' },
      // Event-driven by default: each read is a long-poll, so the bench adds no polling delay of its own.
      'poll-query': { type: 'string', default: 'wait=10s' },
      'pgbench-seconds': { type: 'string' },
      entry: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'redis-url': { type: 'string', default: process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379/0' },
      'no-engine': { type: 'boolean', default: false },
      'no-pgbench': { type: 'boolean', default: false },
      'no-peers': { type: 'boolean', default: false },
      scale: { type: 'boolean' },
      'no-scale': { type: 'boolean', default: false },
      'no-tables': { type: 'boolean', default: false },
      'no-timeline': { type: 'boolean', default: false },
      'observe-leases': { type: 'string' },
      'no-observe': { type: 'boolean', default: false },
      'no-retention': { type: 'boolean', default: false },
      small: { type: 'string' },
      large: { type: 'string' },
      'keep-database': { type: 'boolean', default: false },
      'private-postgres': { type: 'boolean', default: false },
    },
  });
  if (values.help === true) return 'help';
  const quick = values.quick;
  // Quick skips the production build (12 s on a quiet 2-core machine, 45 s on a loaded one): its
  // children load the sources through tsx, the same code once loaded; --entry dist asks for the build.
  const entry = values.entry ?? (quick ? 'tsx' : 'dist');
  if (entry !== 'dist' && entry !== 'tsx') throw new Error('--entry expects dist or tsx');
  return {
    quick,
    n: positive('n', values.n, quick ? 30 : 200),
    clients: values.clients === undefined ? (quick ? [1, 8] : [1, 8, 64]) : list(values.clients),
    pollMs: positive('poll-ms', values['poll-ms'], 50),
    warmup: quick ? 10 : 20,
    pollQuery: values['poll-query'],
    pgbenchSeconds: positive('pgbench-seconds', values['pgbench-seconds'], quick ? 2 : 5),
    entry,
    logLevel: values['log-level'],
    redisUrl: values['redis-url'],
    engine: !values['no-engine'],
    pgbench: !values['no-pgbench'],
    peers: !values['no-peers'],
    scale: values['no-scale'] ? false : (values.scale ?? true),
    tables: !values['no-tables'],
    small: positive('small', values.small, 1_000),
    large: positive('large', values.large, 100_000),
    tableEvents: quick ? 400 : 4_000,
    idleReads: quick ? 600 : 5_000,
    idleReleasedShare: quick ? 0.1 : 1,
    keepDatabase: values['keep-database'],
    privatePostgres: values['private-postgres'],
    timeline: !values['no-timeline'],
    observeLeases: values['no-observe']
      ? 0
      : positive('observe-leases', values['observe-leases'], quick ? 1_000 : 10_000),
    observeWindowS: quick ? 20 : 60,
    retentionRounds: values['no-retention'] ? 0 : quick ? 12 : 24,
    retentionPerRound: quick ? 20 : 50,
  };
}
