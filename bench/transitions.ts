// Actor transitions per second in-process (no HTTP, no auth): the runtime over real PostgreSQL,
// C clients each sending events to its own actor, half plain and half with one outbox effect. Also
// prints the statements each transition ran inside its transaction. Used to compare the protocol's
// statement shape before and after a change (docs/performance.md), e.g.:
//   npx tsx bench/transitions.ts --clients 1,8 --events 400
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { assign, setup, type AnyMachineSnapshot } from 'xstate';
import type { ActorDefinition } from '../actors/definition.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import type { Database, Queryable } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createPgDatabase } from '../store/pg-database.ts';

type BenchEvent = { type: 'flip' } | { type: 'add'; amount: number };

const machine = setup({
  types: { context: {} as { count: number }, events: {} as BenchEvent },
  actions: { 'effect.announce': (_, _params: { count: number }) => undefined },
}).createMachine({
  id: 'bench',
  context: { count: 0 },
  initial: 'Even',
  states: { Even: { on: { flip: 'Odd' } }, Odd: { on: { flip: 'Even' } } },
  on: {
    add: {
      actions: [
        assign({ count: ({ context, event }) => context.count + event.amount }),
        { type: 'effect.announce', params: ({ context }) => ({ count: context.count }) },
      ],
    },
  },
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

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
}

const url = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const clientCounts = option('clients', '1,8').split(',').map(Number);
const eventsPerPoint = Number(option('events', '400'));

async function main(): Promise<void> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const db = createPgDatabase({ connectionString: url, schema, max: 16 });
  let statements = 0;
  const counted: Database = {
    ...db,
    transaction: (fn) =>
      db.transaction((tx) =>
        fn({
          query: (sql, params) => {
            statements++;
            return tx.query(sql, params);
          },
          exec: (sql) => {
            statements++;
            return tx.exec(sql);
          },
        } satisfies Queryable),
      ),
  };
  try {
    await migrate(db);
    const runtime = new ActorRuntime({ db: counted, definition });
    const ctx = { actor: 'bench' };
    for (const clients of clientCounts) {
      const ids = Array.from({ length: clients }, (_, i) => `bench-${clients}-${i}`);
      for (const id of ids) {
        const identity = { tenantId: 't', projectId: 'p', runId: 'r', idempotencyKey: id };
        await runtime.create({ environmentId: id, ...identity, runSelectionHash: 'h' }, undefined, ctx);
      }
      const each = Math.ceil(eventsPerPoint / clients);
      const send = (id: string, i: number) =>
        runtime.send(id, i % 2 === 0 ? { type: 'flip' } : { type: 'add', amount: 1 }, ctx);
      for (const id of ids) for (let i = 0; i < 10; i++) await send(id, i); // warm-up
      statements = 0;
      const cpu = process.cpuUsage();
      const started = performance.now();
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < each; i++) await send(id, i);
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      const total = each * clients;
      console.log(
        JSON.stringify({
          clients,
          transitions: total,
          perSecond: Math.round(total / seconds),
          statementsPerTransition: +(statements / total).toFixed(2),
          clientCpuMsPerTransition: +((used.user + used.system) / 1000 / total).toFixed(3),
        }),
      );
    }
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

await main();
