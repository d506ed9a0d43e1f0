// Options of `npm run chaos` (chaos/run.ts) and of the smoke test, which calls the harness with its
// own. Every default is here, so the two differ only in what they say explicitly.
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';

export interface ChaosOptions {
  /** Environments the load driver pushes through a whole lifecycle. */
  n: number;
  /** The run's seed: the schedule, each Environment's path and every provider seed derive from it. */
  seed: number;
  /** Lifecycles in flight at once. */
  clients: number;
  apis: number;
  workers: number;
  provider: 'simulated' | 'agent-sandbox';
  /** The fault schedule spans this long from the first register (default: from n). */
  windowMs: number;
  /** Mean time between two process kills. */
  killEveryMs: number;
  redisFlushes: number;
  pgRestarts: number;
  /** SIGSTOP of a worker for several seconds, then SIGCONT. */
  stalls: number;
  /** SANDLOT_CALL_TIMEOUT_MS of every child: how soon an interrupted call counts as Unknown. */
  callTimeoutMs: number;
  /** How long a lifecycle may take before the driver calls it stuck. */
  lifecycleTimeoutMs: number;
  /** How long reconciliation may take to quiesce after the load and the schedule ended. */
  quiesceTimeoutMs: number;
  /** Children run the compiled build (a temporary `npm run build`) or the sources through tsx. */
  entry: 'dist' | 'tsx';
  /** Where the JSON results go (null: nowhere). */
  resultsDir: string | null;
}

export const usage = `Usage: npm run chaos -- [options]

  --n N                 Environments to push through a whole lifecycle (default 1000)
  --seed S              the run's seed (default: random, printed); the same seed repeats the
                        schedule, every Environment's path and every provider fault seed
  --clients C           lifecycles in flight at once (default 24)
  --apis A              API processes (default 2)
  --workers W           worker processes (default 3)
  --provider P          simulated (default) or agent-sandbox (the adapter on the fake Kubernetes API)
  --window S            seconds the fault schedule spans (default: 20 + n/8, at most 600)
  --kill-every S        mean seconds between two process kills (default 5)
  --redis-flushes K     FLUSHALL of the harness's own Redis (default 2)
  --pg-restarts K       restarts of the harness's own PostgreSQL (default 1)
  --stalls K            SIGSTOP of a worker for 5-9 s, then SIGCONT (default 2)
  --call-timeout-ms MS  SANDLOT_CALL_TIMEOUT_MS of the children (default 2000; 15000 on agent-sandbox,
                        whose calls make several Kubernetes requests and wait for deletions)
  --entry dist|tsx      children run a temporary build (default) or the sources through tsx
  --results DIR         where the JSON results go (default chaos/results; "-" for nowhere)
  --help
`;

const number = (name: string, value: string | undefined, fallback: number, min = 0): number => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min) throw new Error(`--${name} expects an integer ≥ ${min}`);
  return parsed;
};

/** The fault window when none is given: long enough to cover most of the load at a few per second. */
export const defaultWindowMs = (n: number): number => Math.min(600_000, 20_000 + Math.round(n * 125));

export function chaosDefaults(overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const n = overrides.n ?? 1000;
  return {
    n,
    seed: randomInt(1, 2 ** 31 - 1),
    clients: 24,
    apis: 2,
    workers: 3,
    provider: 'simulated',
    windowMs: defaultWindowMs(n),
    killEveryMs: 5_000,
    redisFlushes: 2,
    pgRestarts: 1,
    stalls: 2,
    callTimeoutMs: 2_000,
    lifecycleTimeoutMs: 240_000,
    quiesceTimeoutMs: 180_000,
    entry: 'dist',
    resultsDir: 'chaos/results',
    ...overrides,
  };
}

export function parseChaosArgs(argv: string[]): ChaosOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      seed: { type: 'string' },
      clients: { type: 'string' },
      apis: { type: 'string' },
      workers: { type: 'string' },
      provider: { type: 'string' },
      window: { type: 'string' },
      'kill-every': { type: 'string' },
      'redis-flushes': { type: 'string' },
      'pg-restarts': { type: 'string' },
      stalls: { type: 'string' },
      'call-timeout-ms': { type: 'string' },
      entry: { type: 'string' },
      results: { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) return 'help';
  const provider = values.provider ?? 'simulated';
  if (provider !== 'simulated' && provider !== 'agent-sandbox') {
    throw new Error('--provider expects simulated or agent-sandbox');
  }
  const entry = values.entry ?? 'dist';
  if (entry !== 'dist' && entry !== 'tsx') throw new Error('--entry expects dist or tsx');
  const n = number('n', values.n, 1000, 1);
  const defaults = chaosDefaults({ n });
  const window = values.window === undefined ? undefined : number('window', values.window, 0, 1) * 1000;
  const killEvery = number('kill-every', values['kill-every'], defaults.killEveryMs / 1000, 1) * 1000;
  return {
    ...defaults,
    seed: number('seed', values.seed, defaults.seed, 0),
    clients: number('clients', values.clients, defaults.clients, 1),
    apis: number('apis', values.apis, defaults.apis, 2),
    workers: number('workers', values.workers, defaults.workers, 2),
    provider,
    windowMs: window ?? defaults.windowMs,
    killEveryMs: killEvery,
    redisFlushes: number('redis-flushes', values['redis-flushes'], defaults.redisFlushes),
    pgRestarts: number('pg-restarts', values['pg-restarts'], defaults.pgRestarts),
    stalls: number('stalls', values.stalls, defaults.stalls),
    callTimeoutMs: number(
      'call-timeout-ms',
      values['call-timeout-ms'],
      provider === 'agent-sandbox' ? 15_000 : defaults.callTimeoutMs,
      100,
    ),
    entry,
    resultsDir: values.results === '-' ? null : (values.results ?? defaults.resultsDir),
  };
}
