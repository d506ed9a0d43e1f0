// A real API process with 1k and then 100k idle Environments in its database: the 1 API + 1 worker
// stack of the main HTTP series (`sandlot serve --no-workers` and `sandlot worker` children, see
// bench/lib/stack.ts), once its points are measured. A lifecycle it completed and one Environment
// only registered serve as templates; their rows (the Environment, journal, lease, settled
// attempts, Workspace volume and storage, acknowledged outbox rows) are bulk-copied under new,
// valid Environment IDs until the tables hold `small`, then `large`, Environments. After each
// fill the same load runs: reads of idle Environments (lifecycle, inspection, journal; distinct
// ones at `large`), then N lifecycles at `clients`. Measured: the API process's VmRSS after each
// phase (median of five samples, /proc/<pid>/status) and the lifecycles' throughput and CPU per
// lifecycle (API, worker, PostgreSQL), so 100k / 1k is also a cost ratio over HTTP.
import pg from 'pg';
import { driveHttp } from './http-driver.ts';
import type { BenchDatabase, PgProbe } from './postgres.ts';
import { LATE_SWEEPS } from '../../store/leases.ts';
import { memoryKiB } from './proc.ts';
import { status } from './progress.ts';
import { PROJECT, RUN, type Stack } from './stack.ts';
import { round } from './stats.ts';
import { openWindow } from './window.ts';

export interface IdleOptions {
  small: number;
  large: number;
  /** Reads of idle Environments per phase. */
  reads: number;
  /** Lifecycles per phase, at `clients`. */
  n: number;
  clients: number;
  pollMs: number;
  /** Share of the copies made from a Released lifecycle (the rest: Registered only). */
  releasedShare: number;
}

export interface IdlePhase {
  environments: number;
  /** Reads of idle Environments and how many distinct ones they named. */
  reads: number;
  distinctRead: number;
  readStatuses: Record<string, number>;
  readMsPerRequest: number;
  completed: number;
  lifecyclesPerSecond: number;
  cpuMsPerLifecycle: Record<string, number>;
  apiRssMiB: number;
  apiHwmMiB: number;
  /**
   * Rows read by sequential scans per table over the phase (pg_stat_user_tables, which backends
   * report with up to a second's delay): a table scanned whole would show here as `large` grows.
   */
  seqTuplesRead: Record<string, number>;
}

export interface IdleResult {
  small: IdlePhase;
  large: IdlePhase;
  fillSeconds: number;
  /** Rows copied per table for the `large` fill. */
  copiedRows: Record<string, number>;
  apiRssMiBAdded: number;
  /** Lifecycles/s at `small` / at `large` (1: no slower). */
  lifecycleCostRatio: number;
  /** CPU ms per lifecycle (API + worker + PostgreSQL) at `large` / at `small`. */
  cpuCostRatio: number;
}

const ENVIRONMENTS = `/api/projects/${PROJECT}/runs/${RUN}/environments`;

// Tables copied per template, parents first. Other tables with an environment_id column (added by
// later migrations) are copied after these.
const VOLUME_ROWS = 'volume_id IN (SELECT volume_id FROM workspace_volumes WHERE environment_id = $1)';
interface TableCopy {
  table: string;
  where: string;
  /** More rows per copy: `generate_series(1, k) AS n` beside the copy number g. */
  perCopy?: number;
  /** Expressions for some columns instead of the usual ones. */
  override?: Record<string, string>;
}

// An idle fleet's old leases are past their late sweeps: the copies of a Released lease carry
// LATE_SWEEPS succeeded sweep attempts (made from its release attempt) and the matching counts, so
// the reconciler finds nothing due for them, as it would for a lease swept long ago, yet its query
// still reads them as it reads such leases. (The template itself may still have a sweep due.)
const SWEEPS: TableCopy = {
  table: 'provider_attempts',
  where: `environment_id = $1 AND kind = 'release' AND state = 'Succeeded'`,
  perCopy: LATE_SWEEPS,
  override: { attempt_id: `attempt_id || '-sweep' || n || '-' || g`, kind: `'sweep'` },
};

const ORDERED: TableCopy[] = [
  { table: 'environments', where: 'environment_id = $1' },
  { table: 'environment_journal', where: 'environment_id = $1' },
  { table: 'workspace_volumes', where: 'environment_id = $1' },
  { table: 'embedded_workspace_storage', where: VOLUME_ROWS },
  { table: 'workspace_storage_bindings', where: VOLUME_ROWS },
  {
    table: 'sandbox_leases',
    where: 'environment_id = $1',
    override: {
      late_sweeps: `CASE WHEN state IN ('Released', 'Failed') THEN ${LATE_SWEEPS} ELSE late_sweeps END`,
      sweeps_listed: `CASE WHEN state IN ('Released', 'Failed') THEN ${LATE_SWEEPS} ELSE sweeps_listed END`,
    },
  },
  // Only settled rows: an unresolved attempt or unacknowledged outbox row would be work to do.
  {
    table: 'provider_attempts',
    where: `environment_id = $1 AND state NOT IN ('Pending', 'Dispatched', 'Unknown') AND kind <> 'sweep'`,
  },
  SWEEPS,
  { table: 'outbox', where: 'environment_id = $1 AND acknowledged_at IS NOT NULL' },
];

// A valid Environment ID (env_ + 32 of [a-z2-7]) per copy number g: its hex digits as letters a–p,
// padded with z, so no copy can collide with another or with a real (hash-derived) ID in practice.
const NEW_ID = `'env_' || lpad(translate(to_hex(g), '0123456789abcdef', 'abcdefghijklmnop'), 32, 'z')`;

interface CopyPlan {
  table: string;
  where: string;
  perCopy: number;
  columns: string[];
  expressions: string[];
}

async function copyPlans(client: pg.Client): Promise<CopyPlan[]> {
  const { rows } = await client.query<{
    table_name: string;
    column_name: string;
    column_default: string | null;
  }>(
    // Generated columns (sandbox_host_assignments.previous_sequence) take no value: they follow.
    `SELECT table_name, column_name, column_default FROM information_schema.columns
      WHERE table_schema = current_schema() AND is_generated = 'NEVER'
      ORDER BY table_name, ordinal_position`,
  );
  const byTable = new Map<string, Array<{ name: string; serial: boolean }>>();
  for (const row of rows) {
    const list = byTable.get(row.table_name) ?? [];
    list.push({ name: row.column_name, serial: row.column_default?.startsWith('nextval(') === true });
    byTable.set(row.table_name, list);
  }
  const extra = [...byTable]
    .filter(
      ([table, columns]) =>
        columns.some((c) => c.name === 'environment_id') && !ORDERED.some((o) => o.table === table),
    )
    .filter(([table]) => !table.startsWith('simulated_'))
    .map(([table]): TableCopy => ({ table, where: 'environment_id = $1' }));
  const plans: CopyPlan[] = [];
  for (const { table, where, perCopy, override } of [...ORDERED, ...extra]) {
    const columns = (byTable.get(table) ?? []).filter((c) => !c.serial).map((c) => c.name);
    if (columns.length === 0) continue;
    plans.push({
      table,
      where,
      perCopy: perCopy ?? 1,
      columns,
      expressions: columns.map((column) => {
        const special = override?.[column];
        if (special !== undefined) return special;
        if (column === 'environment_id' || column === 'pvc_environment_id') return NEW_ID;
        if (column === 'idempotency_key' && table === 'environments') return `'idle-' || g`;
        if (['operation_id', 'attempt_id', 'volume_id'].includes(column)) return `${column} || '-' || g`;
        return column;
      }),
    });
  }
  return plans;
}

/** Copies `template`'s rows for copy numbers from..to; answers rows inserted per table. */
async function copyTemplate(
  client: pg.Client,
  plans: CopyPlan[],
  template: string,
  from: number,
  to: number,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  if (to < from) return counts;
  for (const plan of plans) {
    const result = await client.query(
      `INSERT INTO ${plan.table} (${plan.columns.join(', ')})
       SELECT ${plan.expressions.join(', ')}
         FROM ${plan.table}, generate_series($2::int, $3::int) AS g, generate_series(1, ${plan.perCopy}) AS n
        WHERE ${plan.where}`,
      [template, from, to],
    );
    counts[plan.table] = (counts[plan.table] ?? 0) + (result.rowCount ?? 0);
  }
  return counts;
}

async function seqTuples(client: pg.Client): Promise<Map<string, number>> {
  const { rows } = await client.query<{ relname: string; n: string }>(
    'SELECT relname, seq_tup_read::text AS n FROM pg_stat_user_tables WHERE schemaname = current_schema()',
  );
  return new Map(rows.map((row) => [row.relname, Number(row.n)]));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function apiMemory(pid: number): Promise<{ rss: number; hwm: number }> {
  const samples: number[] = [];
  let hwm = 0;
  for (let i = 0; i < 5; i++) {
    await sleep(200);
    const memory = memoryKiB(pid);
    if (memory === undefined) throw new Error(`API process ${pid} is gone`);
    samples.push(memory.rss);
    hwm = memory.hwm;
  }
  samples.sort((a, b) => a - b);
  return { rss: round((samples[2] ?? NaN) / 1024, 1), hwm: round(hwm / 1024, 1) };
}

/** `count` GETs over `ids` (lifecycle, inspection and journal in turn), 8 at a time. */
async function readIdle(stack: Stack, ids: string[], count: number) {
  const token = await stack.token();
  const statuses: Record<string, number> = {};
  const routes = ['lifecycle', 'sandbox?networkPolicyGeneration=1', 'journal'];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const id = ids[i % ids.length] as string;
        const route = routes[i % routes.length] as string;
        const base = stack.apiUrls[i % stack.apiUrls.length] as string;
        const res = await fetch(`${base}${ENVIRONMENTS}/${id}/${route}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        await res.arrayBuffer();
        const key = `${route.split('?')[0] ?? route} ${res.status}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
      }
    }),
  );
  return { statuses, ms: (performance.now() - started) / Math.max(1, count) };
}

export async function measureIdleEnvironments(
  stack: Stack,
  database: BenchDatabase,
  probe: PgProbe,
  o: IdleOptions,
): Promise<IdleResult> {
  const client = new pg.Client({ connectionString: database.url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const api = stack.apis[0];
    if (api === undefined) throw new Error('no API process');
    const token = await stack.token();
    // Templates: a lifecycle the stack already completed, and one Environment only registered.
    const registered = await fetch(`${stack.apiUrls[0] ?? ''}${ENVIRONMENTS}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ idempotencyKey: 'template-registered' }),
    });
    const registeredId = ((await registered.json()) as { environmentId?: string }).environmentId;
    const { rows: releasedRows } = await client.query<{ environment_id: string }>(
      `SELECT environment_id FROM environments WHERE lifecycle_state = 'Released' ORDER BY created_at LIMIT 1`,
    );
    const releasedId = releasedRows[0]?.environment_id;
    if (releasedId === undefined || registeredId === undefined) throw new Error('no template Environments');
    const plans = await copyPlans(client);

    let copies = 0;
    const copied: Record<string, number> = {};
    const fillTo = async (total: number) => {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM environments');
      const missing = total - (rows[0]?.n ?? 0);
      if (missing <= 0) return;
      const released = Math.round(missing * o.releasedShare);
      const parts: Array<[string, number]> = [
        [releasedId, released],
        [registeredId, missing - released],
      ];
      for (const [template, count] of parts) {
        const counts = await copyTemplate(client, plans, template, copies + 1, copies + count);
        copies += count;
        for (const [table, rows] of Object.entries(counts)) copied[table] = (copied[table] ?? 0) + rows;
      }
      // What autovacuum would do next (the inserts cross its threshold), done now so that it does
      // not run during the measured phase.
      await client.query(`VACUUM (ANALYZE) ${plans.map((plan) => plan.table).join(', ')}`);
    };

    const phase = async (tag: string): Promise<IdlePhase> => {
      // Every Environment in the tables is idle now (no lifecycle is in flight). The sample is
      // drawn on a connection of its own, closed at once, so that its scan is reported before the
      // phase's scan counters are read.
      const sampler = new pg.Client({ connectionString: database.url });
      await sampler.connect();
      const { rows } = await sampler
        .query<{ environment_id: string; total: number }>(
          `SELECT environment_id, count(*) OVER ()::int AS total FROM environments ORDER BY random() LIMIT $1`,
          [o.reads],
        )
        .finally(() => sampler.end());
      const ids = rows.map((row) => row.environment_id);
      const environments = rows[0]?.total ?? 0;
      if (ids.length === 0) throw new Error('no Environments to read');
      await sleep(200);
      status(
        `idle Environments: ${environments} in the tables, ${o.reads} reads over ${ids.length} idle ones`,
      );
      const seqBefore = await seqTuples(client);
      const read = await readIdle(stack, ids, o.reads);
      const window = await openWindow(probe, {
        fixed: {
          api: stack.apis.map((c) => c.pid),
          worker: stack.workers.map((c) => c.pid),
        },
        postgres: true,
      });
      const run = await driveHttp({
        apiUrls: stack.apiUrls,
        token: await stack.token(),
        n: o.n,
        clients: o.clients,
        pollMs: o.pollMs,
        pollQuery: '',
        tag,
        label: `idle ${environments}: http c=${o.clients}`,
      });
      const measured = await window.stop();
      const memory = await apiMemory(api.pid);
      const seqAfter = await seqTuples(client);
      const seqTuplesRead = Object.fromEntries(
        [...seqAfter]
          .map(([table, n]) => [table, n - (seqBefore.get(table) ?? 0)] as const)
          .filter(([, n]) => n > 0)
          .sort((a, b) => b[1] - a[1]),
      );
      const done = Math.max(1, run.completed);
      return {
        environments,
        reads: o.reads,
        distinctRead: ids.length,
        readStatuses: read.statuses,
        readMsPerRequest: round(read.ms, 2),
        completed: run.completed,
        lifecyclesPerSecond: round(run.completed / (run.wallMs / 1000), 2),
        cpuMsPerLifecycle: Object.fromEntries(
          Object.entries(measured.cpuMs).map(([k, v]) => [k, round(v / done, 2)]),
        ),
        apiRssMiB: memory.rss,
        apiHwmMiB: memory.hwm,
        seqTuplesRead,
      };
    };

    await fillTo(o.small);
    const small = await phase('after-fill-small');
    status(`idle Environments: filling to ${o.large}`);
    const filling = performance.now();
    for (const key of Object.keys(copied)) delete copied[key];
    await fillTo(o.large);
    const fillSeconds = round((performance.now() - filling) / 1000, 1);
    const large = await phase('after-fill-large');
    const cpu = (p: IdlePhase) =>
      (p.cpuMsPerLifecycle['api'] ?? 0) +
      (p.cpuMsPerLifecycle['worker'] ?? 0) +
      (p.cpuMsPerLifecycle['postgres'] ?? 0);
    return {
      small,
      large,
      fillSeconds,
      copiedRows: { ...copied },
      apiRssMiBAdded: round(large.apiRssMiB - small.apiRssMiB, 1),
      lifecycleCostRatio: round(small.lifecyclesPerSecond / large.lifecyclesPerSecond, 3),
      cpuCostRatio: round(cpu(large) / cpu(small), 3),
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}
