// What one page of the Environment list costs with 1,000 and with 100,000 Environments in the
// table: for each filter, the plan PostgreSQL picks (EXPLAIN ANALYZE, BUFFERS), the buffers it
// touches and the median time of a page, first page and a page deep in the list (by cursor).
// Rows are written straight into a throw-away database, spread over 100 runs and 30 days, in the
// proportions a busy project has (most Released, some Active, few with unresolved attempts or
// cleanups); the page is the store's own statement (store/environment-list.ts).
//
//   npx tsx bench/list.ts [--sizes 1000,100000] [--samples 40]
import { parseArgs } from 'node:util';
import {
  listEnvironments,
  listStatement,
  type ListFilters,
  type ListPage,
  type ListScope,
} from '../store/environment-list.ts';
import { migrate } from '../store/migrate.ts';
import { createPgDatabase } from '../store/pg-database.ts';
import type { Database } from '../store/db.ts';
import { createBenchDatabase } from './lib/postgres.ts';
import { status } from './lib/progress.ts';
import { round } from './lib/stats.ts';

const { values: args } = parseArgs({
  options: { sizes: { type: 'string', default: '1000,100000' }, samples: { type: 'string', default: '40' } },
});
const sizes = args.sizes.split(',').map(Number);
const samples = Number(args.samples);

const scope: ListScope = { tenantId: 'acme', projectId: 'checkout' };
const cases: [name: string, scope: ListScope, filters: ListFilters][] = [
  ['project, no filter', scope, {}],
  ['one run', { ...scope, runId: 'run-7' }, {}],
  ['lifecycleState=Registered', scope, { lifecycleState: 'Registered' }],
  ['sandboxState=Active', scope, { sandboxState: 'Active' }],
  ['hasUnresolvedAttempts=true', scope, { hasUnresolvedAttempts: true }],
  ['hasPendingCleanups=true', scope, { hasPendingCleanups: true }],
  ['updatedSince=1 h ago', scope, { updatedSince: new Date(Date.now() - 3_600_000) }],
];

/** Adds Environments up to `total`, two tenants, the same shape at every size. */
async function fillTo(db: Database, from: number, total: number): Promise<void> {
  await db.query(
    `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
        run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation,
        created_by, created_at, updated_at, sandbox_state, unresolved_attempts, open_cleanups)
     SELECT 'env_' || lpad(i::text, 32, '0'), CASE WHEN i % 10 = 0 THEN 'globex' ELSE 'acme' END,
            'checkout', 'run-' || (i % 100), 'k-' || i, 'h', 5, '{}'::jsonb, 3,
            CASE WHEN i % 20 < 16 THEN 'Released' ELSE 'Registered' END, 1, 'bench',
            created, created + CASE WHEN i % 20 < 16 THEN interval '5 minutes' ELSE interval '0' END,
            CASE WHEN i % 20 < 15 THEN 'Released' WHEN i % 20 < 18 THEN 'Active'
                 WHEN i % 20 = 18 THEN 'NoLease' ELSE 'ReconciliationRequired' END,
            CASE WHEN i % 200 = 19 THEN 1 ELSE 0 END, CASE WHEN i % 500 = 39 THEN 1 ELSE 0 END
       FROM generate_series($1::int, $2::int - 1) AS i,
            LATERAL (SELECT now() - interval '30 days' * (1 - i::float8 / $2) AS created) AS t`,
    [from, total],
  );
  // Recently active Environments: the newest Registered ones changed in the last hour.
  await db.query(
    `UPDATE environments SET updated_at = now() - interval '10 minutes'
      WHERE lifecycle_state = 'Registered' AND created_at > now() - interval '2 days'`,
  );
  await db.query('ANALYZE environments');
}

interface Measured {
  plan: string;
  buffers: number;
  rows: number;
  medianMs: number;
}

async function measure(db: Database, s: ListScope, f: ListFilters, page: ListPage): Promise<Measured> {
  const { text, values } = listStatement(s, f, page);
  const { rows } = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
    values,
  );
  const root = rows[0]!['QUERY PLAN'][0]!.Plan;
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    found = (await listEnvironments(db, s, f, page)).length;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return {
    plan: planOf(root),
    buffers: root['Shared Hit Blocks'] + root['Shared Read Blocks'],
    rows: found,
    medianMs: round(times[Math.floor(times.length / 2)]!, 3),
  };
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

function planOf(node: PlanNode): string {
  const own =
    node['Index Name'] === undefined ? node['Node Type'] : `${node['Node Type']} ${node['Index Name']}`;
  const inner = (node.Plans ?? []).map(planOf);
  return inner.length === 0 ? own : `${own} → ${inner.join(', ')}`;
}

/** The cursor position 2 pages of 50 down the case's list (or its last row). */
async function deepPosition(db: Database, s: ListScope, f: ListFilters): Promise<ListPage> {
  const rows = await listEnvironments(db, s, f, { limit: 100 });
  const last = rows.at(-1);
  if (last === undefined) return { limit: 50 };
  return {
    limit: 50,
    after: { createdAtMicros: BigInt(last.createdAtMicros), environmentId: last.environmentId },
  };
}

async function main(): Promise<void> {
  const database = await createBenchDatabase();
  const db = createPgDatabase({ connectionString: database.url, max: 2 });
  const results = new Map<string, Measured[]>();
  try {
    await migrate(db);
    let filled = 0;
    for (const size of sizes) {
      status(`filling to ${size} Environments`);
      await fillTo(db, filled, size);
      filled = size;
      for (const [name, s, f] of cases) {
        status(`${size}: ${name}`);
        const first = await measure(db, s, f, { limit: 50 });
        const deep = await measure(db, s, f, await deepPosition(db, s, f));
        results.set(`${name}|first|${size}`, [first]);
        results.set(`${name}|page 3|${size}`, [deep]);
      }
    }
  } finally {
    await db.close();
    await database.drop();
  }
  const [small, large] = [sizes[0]!, sizes.at(-1)!];
  console.log(
    `\nEnvironment list: one page of 50 (limit + 1 read); buffers: shared blocks the page touched (EXPLAIN ANALYZE), ${samples} samples per cell`,
  );
  console.log(
    [
      'case',
      'page',
      `ms @${small}`,
      `ms @${large}`,
      'ratio',
      `buffers @${small}`,
      `buffers @${large}`,
      'plan @large',
    ].join(' | '),
  );
  for (const [name] of cases) {
    for (const which of ['first', 'page 3']) {
      const a = results.get(`${name}|${which}|${small}`)![0]!;
      const b = results.get(`${name}|${which}|${large}`)![0]!;
      console.log(
        [
          name,
          which,
          a.medianMs,
          b.medianMs,
          round(b.medianMs / a.medianMs, 2),
          a.buffers,
          b.buffers,
          b.plan,
        ].join(' | '),
      );
    }
  }
}

await main();
