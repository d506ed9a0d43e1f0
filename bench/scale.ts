// Per-transition cost with 1k vs 100k Environments in the tables, side by side in one run: the
// actor protocol in-process over real PostgreSQL (no HTTP, no auth), C clients each driving its own
// fresh actor, first with 1k Environment rows (and their journal rows) in the schema, then again
// after bulk-copying rows up to 100k and ANALYZE. Each point is the median of three rounds after a
// warm-up round. Also this process's RSS before and after (the runtime keeps nothing per idle
// Environment); the RSS of a real API process is measured by bench/lib/idle.ts.
// `npm run bench` imports `measureTableScale`; alone:
//   npx tsx bench/scale.ts [--small 1000] [--large 100000] [--clients 8] [--events 4000]
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { setup, type AnyMachineSnapshot } from 'xstate';
import type { ActorDefinition } from '../actors/definition.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import { migrate } from '../store/migrate.ts';
import { createPgDatabase } from '../store/pg-database.ts';

type BenchEvent = { type: 'flip' };

const machine = setup({ types: { events: {} as BenchEvent } }).createMachine({
  id: 'scale',
  initial: 'Even',
  states: { Even: { on: { flip: 'Odd' } }, Odd: { on: { flip: 'Even' } } },
});

const definition: ActorDefinition<BenchEvent> = {
  machine,
  version: 1,
  migrations: {},
  project: (snapshot: AnyMachineSnapshot) => ({
    lifecycleState: String(snapshot.value),
    lifecycleGeneration: 1,
  }),
  fences: () => ({}),
};

export interface TableScaleOptions {
  /** A database URL; a schema `bench_scale_<random>` is created in it and dropped at the end. */
  url: string;
  small?: number;
  large?: number;
  clients?: number;
  /** Transitions per round (split over the clients). */
  events?: number;
  /** Transitions on idle copies after the second point, before reading the RSS (default 2,000). */
  touches?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

export interface TableScalePoint {
  environments: number;
  transitionsPerSecond: number;
  msPerTransition: number;
  /** ms per transition of each round (the point is their median). */
  rounds: number[];
}

export interface TableScaleResult {
  clients: number;
  events: number;
  small: TableScalePoint;
  large: TableScalePoint;
  /** ms per transition at `large` / at `small`: 1 means no growth. */
  costRatio: number;
  fillSeconds: number;
  rssMiBBefore: number;
  rssMiBAfter: number;
  rssMiBAdded: number;
}

const rssMiB = () => Math.round((process.memoryUsage().rss / 1024 / 1024) * 10) / 10;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const ROUNDS = 3;

export async function measureTableScale(options: TableScaleOptions): Promise<TableScaleResult> {
  const small = options.small ?? 1_000;
  const large = options.large ?? 100_000;
  const clients = options.clients ?? 8;
  const events = options.events ?? 4_000;
  const log = options.log ?? (() => undefined);
  const schema = `bench_scale_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: options.url, options: `-c search_path=${schema}` });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const db = createPgDatabase({ connectionString: options.url, schema, max: 16 });
  try {
    await migrate(db);
    const runtime = new ActorRuntime({ db, definition });
    const ctx = { actor: 'bench' };
    const create = (id: string) =>
      runtime.create(
        {
          environmentId: id,
          tenantId: 't',
          projectId: 'p',
          runId: 'r',
          idempotencyKey: id,
          runSelectionHash: 'h',
        },
        undefined,
        ctx,
      );
    await create('seed');
    await runtime.send('seed', { type: 'flip' }, ctx);

    /** Copies the seed Environment (row and journal) until the table holds `total` rows. */
    let copies = 0;
    const fillTo = async (total: number) => {
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM environments');
      const missing = total - (rows[0]?.n ?? 0);
      if (missing <= 0) return;
      const from = copies + 1;
      copies += missing;
      await admin.query(
        `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
           run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation,
           created_by)
         SELECT 'bulk-' || g, tenant_id, project_id, run_id, 'bulk-' || g, run_selection_hash,
                machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by
           FROM environments, generate_series($1::int, $2::int) AS g WHERE environment_id = 'seed'`,
        [from, copies],
      );
      await admin.query(
        `INSERT INTO environment_journal (environment_id, revision, event_type, event, from_state, to_state, actor)
         SELECT 'bulk-' || g, j.revision, j.event_type, j.event, j.from_state, j.to_state, j.actor
           FROM environment_journal j, generate_series($1::int, $2::int) AS g WHERE j.environment_id = 'seed'`,
        [from, copies],
      );
      // What autovacuum would do next, done now so that it does not run during the measured point.
      await admin.query('VACUUM (ANALYZE) environments, environment_journal');
    };

    /** ms per transition of `clients` fresh actors, `events` transitions in all. */
    let round = 0;
    const measureRound = async () => {
      round += 1;
      const ids = Array.from({ length: clients }, (_, i) => `round${round}-${i}`);
      for (const id of ids) await create(id);
      for (const id of ids) for (let i = 0; i < 5; i++) await runtime.send(id, { type: 'flip' }, ctx);
      const each = Math.ceil(events / clients);
      const started = performance.now();
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < each; i++) await runtime.send(id, { type: 'flip' }, ctx);
        }),
      );
      return (performance.now() - started) / (each * clients);
    };
    const measure = async (environments: number): Promise<TableScalePoint> => {
      const rounds: number[] = [];
      for (let i = 0; i < ROUNDS; i++) rounds.push(await measureRound());
      const ms = median(rounds);
      log(`${environments} Environments: ${(1000 / ms).toFixed(0)} transitions/s (median of ${ROUNDS})`);
      return {
        environments,
        transitionsPerSecond: Math.round(1000 / ms),
        msPerTransition: Math.round(ms * 10_000) / 10_000,
        rounds: rounds.map((r) => Math.round(r * 10_000) / 10_000),
      };
    };

    await fillTo(small);
    await measureRound(); // JIT and pool warm-up, so the first point is not penalised
    const rssBefore = rssMiB();
    const first = await measure(small);
    log(`filling to ${large} Environments`);
    const filling = performance.now();
    await fillTo(large);
    const fillSeconds = (performance.now() - filling) / 1000;
    const second = await measure(large);
    // Touch many of the idle Environments through the runtime (reads by the protocol's own path).
    const touches = Math.min(options.touches ?? 2_000, copies);
    for (let i = 0; i < touches; i++)
      await runtime.send(`bulk-${1 + ((i * 37) % copies)}`, { type: 'flip' }, ctx);
    const rssAfter = rssMiB();
    return {
      clients,
      events,
      small: first,
      large: second,
      costRatio: Math.round((second.msPerTransition / first.msPerTransition) * 1000) / 1000,
      fillSeconds: Math.round(fillSeconds * 10) / 10,
      rssMiBBefore: rssBefore,
      rssMiBAfter: rssAfter,
      rssMiBAdded: Math.round((rssAfter - rssBefore) * 10) / 10,
    };
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const option = (name: string, fallback: number): number => {
    const at = process.argv.indexOf(`--${name}`);
    return Number(at === -1 ? fallback : (process.argv[at + 1] ?? fallback));
  };
  const result = await measureTableScale({
    url: process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
    small: option('small', 1_000),
    large: option('large', 100_000),
    clients: option('clients', 8),
    events: option('events', 4_000),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  console.log(JSON.stringify(result));
}
