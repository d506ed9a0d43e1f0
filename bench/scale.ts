// Per-transition cost with 1k vs 100k Environments in the tables, side by side in one run: the
// actor protocol in-process over real PostgreSQL (no HTTP, no auth), C clients each driving its own
// fresh actor, first with 1k Environment rows (and their journal rows) in the schema, then again
// after bulk-copying rows up to 100k and ANALYZE. Also the process RSS before and after: a runtime
// that has committed to Environments among 100k keeps nothing per Environment once they are idle.
//   npx tsx bench/scale.ts [--small 1000] [--large 100000] [--clients 8] [--events 800]
import { randomBytes } from 'node:crypto';
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

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return Number(at === -1 ? fallback : (process.argv[at + 1] ?? fallback));
}

const url = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const small = option('small', 1_000);
const large = option('large', 100_000);
const clients = option('clients', 8);
const events = option('events', 800);

const rssMiB = () => Math.round((process.memoryUsage().rss / 1024 / 1024) * 10) / 10;

async function main(): Promise<void> {
  const schema = `bench_scale_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const db = createPgDatabase({ connectionString: url, schema, max: 16 });
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
      await admin.query('ANALYZE');
    };

    /** Transitions/s of `clients` fresh actors, `events` transitions in all. */
    const measure = async (label: string) => {
      const ids = Array.from({ length: clients }, (_, i) => `${label}-${i}`);
      for (const id of ids) await create(id);
      for (const id of ids) for (let i = 0; i < 10; i++) await runtime.send(id, { type: 'flip' }, ctx);
      const each = Math.ceil(events / clients);
      const started = performance.now();
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < each; i++) await runtime.send(id, { type: 'flip' }, ctx);
        }),
      );
      const ms = performance.now() - started;
      return {
        perSecond: Math.round((each * clients) / (ms / 1000)),
        msPerTransition: ms / (each * clients),
      };
    };

    await fillTo(small);
    await measure('warm-up'); // JIT and pool warm-up, so the first point is not penalised
    const rssBefore = rssMiB();
    const first = await measure('small');
    process.stderr.write(`filling to ${large} Environments…\n`);
    await fillTo(large);
    const second = await measure('large');
    // Touch many of the idle Environments through the runtime (reads by the protocol's own path).
    for (let i = 0; i < 2_000; i++)
      await runtime.send(`bulk-${1 + ((i * 37) % copies)}`, { type: 'flip' }, ctx);
    const rssAfter = rssMiB();
    console.log(
      JSON.stringify({
        clients,
        events,
        [`perSecondAt${small}`]: first.perSecond,
        [`perSecondAt${large}`]: second.perSecond,
        costRatio: +(second.msPerTransition / first.msPerTransition).toFixed(3),
        rssMiBBefore: rssBefore,
        rssMiBAfter: rssAfter,
        rssMiBAdded: +(rssAfter - rssBefore).toFixed(1),
      }),
    );
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

await main();
