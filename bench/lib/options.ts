// Command-line options of `npm run bench` (bench/lifecycle.ts). `--quick` picks small defaults that
// finish in under 3 minutes on a 2-core machine; any explicit option still wins over them.
import { parseArgs } from 'node:util';

export interface BenchOptions {
  quick: boolean;
  n: number;
  clients: number[];
  pollMs: number;
  pollQuery: string;
  pgbenchSeconds: number;
  entry: 'dist' | 'tsx';
  logLevel: string;
  redisUrl: string;
  engine: boolean;
  pgbench: boolean;
  peers: boolean;
  scale: boolean;
  keepDatabase: boolean;
  privatePostgres: boolean;
}

export const usage = `Usage: npm run bench -- [options]

  --quick               small run (N=30, clients 1,8, pgbench 3 s, no scale runs): under 3 minutes
  --n N                 lifecycles per point (default 200; quick 30)
  --clients LIST        lifecycles in flight, comma-separated (default 1,8,64; quick 1,8)
  --poll-ms MS          pause between polling reads of one lifecycle (default 50)
  --poll-query Q        extra query for polling reads, e.g. wait=5s (a long-poll parameter)
  --pgbench-seconds S   pgbench duration per client count (default 5; quick 3)
  --entry dist|tsx      children run the compiled build (default) or cli/sandlot.mjs
  --log-level LEVEL     LOG_LEVEL of the children (default info, as in production)
  --redis-url URL       default redis://127.0.0.1:6379/0
  --no-engine           skip the engine-only variant
  --no-pgbench          skip the PostgreSQL limit
  --no-peers            skip bench/peers/run.ts
  --scale / --no-scale  1 vs 2 workers and 1 vs 2 API processes (default on; off with --quick)
  --keep-database       keep the bench_<time> database for inspection
  --private-postgres    run PostgreSQL of the bench's own (initdb in a temp dir, free port) instead
                        of 127.0.0.1:5432, so nobody else's transactions count (needs initdb/pg_ctl)
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
      'poll-query': { type: 'string', default: '' },
      'pgbench-seconds': { type: 'string' },
      entry: { type: 'string', default: 'dist' },
      'log-level': { type: 'string', default: 'info' },
      'redis-url': { type: 'string', default: process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379/0' },
      'no-engine': { type: 'boolean', default: false },
      'no-pgbench': { type: 'boolean', default: false },
      'no-peers': { type: 'boolean', default: false },
      scale: { type: 'boolean' },
      'no-scale': { type: 'boolean', default: false },
      'keep-database': { type: 'boolean', default: false },
      'private-postgres': { type: 'boolean', default: false },
    },
  });
  if (values.help === true) return 'help';
  const quick = values.quick;
  const entry = values.entry;
  if (entry !== 'dist' && entry !== 'tsx') throw new Error('--entry expects dist or tsx');
  return {
    quick,
    n: positive('n', values.n, quick ? 30 : 200),
    clients: values.clients === undefined ? (quick ? [1, 8] : [1, 8, 64]) : list(values.clients),
    pollMs: positive('poll-ms', values['poll-ms'], 50),
    pollQuery: values['poll-query'],
    pgbenchSeconds: positive('pgbench-seconds', values['pgbench-seconds'], quick ? 3 : 5),
    entry,
    logLevel: values['log-level'],
    redisUrl: values['redis-url'],
    engine: !values['no-engine'],
    pgbench: !values['no-pgbench'],
    peers: !values['no-peers'],
    scale: values['no-scale'] ? false : (values.scale ?? !quick),
    keepDatabase: values['keep-database'],
    privatePostgres: values['private-postgres'],
  };
}
