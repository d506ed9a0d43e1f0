// Sandlot's engine alone, for comparison with the peers' engine-only harnesses: the same lifecycle
// (register → Workspace volume → provision → inspect until readyForDispatch → release → Released)
// driven through the services in-process (actors/services.ts), with the simulated provider and
// in-process workers over PostgreSQL, as test/support/harness.ts builds them: no HTTP and no
// authentication, and Projects and run selection answered from memory, so that only the engine's
// own work (its transactions, the runtime, the workers) is measured.
import pg from 'pg';
import type { Caller, ProjectsAuthority, RunSelection, RunSelectionSource } from '../../actors/ports.ts';
import type { WaitOptions } from '../../actors/wait.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { TableRunSelections } from '../../store/run-selections.ts';
import { allPermissions, buildHarness, seedProject, type Harness } from '../../test/support/harness.ts';
import type { WorkerSettings } from '../../workers/host.ts';
import { createBenchDatabase, openProbe, type BenchDatabase, type PgProbe } from './postgres.ts';
import { progress, status } from './progress.ts';
import { PROJECT, RUN, SUBJECT, TENANT } from './stack.ts';
import { Samples, round, type Summary } from './stats.ts';
import { openWindow } from './window.ts';

export interface EngineOptions {
  /** Lifecycles per concurrency point (default 200). */
  n?: number;
  /** Lifecycles in flight (default [1, 8, 64]). */
  clients?: number[];
  /** Pause between two polling reads of one lifecycle, when `waitMs` is 0 (default 50 ms). */
  pollMs?: number;
  /** Reads long-poll for up to this long (default 10 s, as the HTTP client's `wait=10s`); 0 polls. */
  waitMs?: number;
  /** Unmeasured lifecycles first (default 20). */
  warmup?: number;
  /** Worker concurrency (default 8, as `sandlot worker`). */
  workerConcurrency?: number;
  /** A database to use (a schema `engine_<time>` is created in it); default a throw-away one. */
  database?: BenchDatabase;
}

export interface EnginePoint {
  variant: 'engine';
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
  cpuMsPerLifecycle: { engine: number; postgres: number };
  latencyMs: Record<string, Summary>;
}

// Production defaults of `sandlot worker` (the test harness polls faster).
export const productionLike = (concurrency: number): WorkerSettings => ({
  concurrency,
  callTimeoutMs: 30_000,
  reconcileEveryMs: 5_000,
  republishAfterMs: 5_000,
  relayPollMs: 1_000,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Engine {
  h: Harness;
  database: BenchDatabase;
  /** The schema the engine's tables are in (`engine_<time>`). */
  schema: string;
  /** Stops the harness and drops the schema (or the whole database, when it made it). */
  close(): Promise<void>;
}

/**
 * The engine in this process: the harness's services and workers over a schema of its own, Projects
 * and run selection answered from memory, one project seeded with a network policy.
 */
export async function openEngine(options: {
  database?: BenchDatabase;
  workers: WorkerSettings;
}): Promise<Engine> {
  const own = options.database === undefined;
  const database = options.database ?? (await createBenchDatabase());
  const schema = `engine_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const db = createPgDatabase({ connectionString: database.url, schema, max: 10 });
  let frozen: RunSelection | null = null;
  const authority: ProjectsAuthority = { permissions: () => Promise.resolve(new Set(allPermissions)) };
  const selections: RunSelectionSource = { get: () => Promise.resolve(frozen) };
  let h: Harness | undefined;
  const close = async () => {
    await h?.close();
    await db.close();
    if (own) await database.drop();
    else {
      const cleanup = new pg.Client({ connectionString: database.url });
      await cleanup.connect();
      await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
      await cleanup.end();
    }
  };
  try {
    h = await buildHarness(db, { authority, selections, workers: options.workers });
    await seedProject(h, { tenant: TENANT, project: PROJECT, run: RUN, subject: SUBJECT });
    frozen = await new TableRunSelections(db).get(TENANT, PROJECT, RUN);
    const operator = await h.token(TENANT, 'ops', { operator: true });
    const policy = await h.request('PUT', `/admin/tenants/${TENANT}/projects/${PROJECT}/network-policies/1`, {
      token: operator,
      body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
    });
    if (policy.status !== 201) throw new Error(`network policy: ${policy.status}`);
    return { h, database, schema, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Runs the engine-only lifecycle at each client count and returns one point per count. */
export async function runEngineOnly(options: EngineOptions = {}): Promise<EnginePoint[]> {
  const n = options.n ?? 200;
  const clientCounts = options.clients ?? [1, 8, 64];
  const pollMs = options.pollMs ?? 50;
  const waitMs = options.waitMs ?? 10_000;
  const engine = await openEngine({
    ...(options.database === undefined ? {} : { database: options.database }),
    workers: productionLike(options.workerConcurrency ?? 8),
  });
  const { h, database, schema } = engine;
  let probe: PgProbe | undefined;
  try {
    probe = await openProbe(database);
    const points: EnginePoint[] = [];
    // A short warm-up (JIT, pool connections), not measured.
    await drive(h, {
      n: Math.min(options.warmup ?? 20, n),
      clients: 4,
      pollMs,
      waitMs,
      tag: `${schema}-warm`,
      label: 'engine warm-up',
    });
    for (const clients of clientCounts) {
      status(`engine-only: ${n} lifecycles, ${clients} in flight`);
      const providerBefore = await probe.providerWrites(schema);
      const window = await openWindow(probe, { fixed: {}, postgres: true });
      const cpuBefore = process.cpuUsage();
      const run = await drive(h, {
        n,
        clients,
        pollMs,
        waitMs,
        tag: `${schema}-c${clients}`,
        label: `engine c=${clients}`,
      });
      const cpu = process.cpuUsage(cpuBefore);
      const measured = await window.stop();
      const providerWrites = (await probe.providerWrites(schema)) - providerBefore;
      const done = Math.max(1, run.completed);
      points.push({
        variant: 'engine',
        clients,
        n,
        completed: run.completed,
        failed: n - run.completed,
        errors: run.errors,
        wallMs: round(run.wallMs),
        lifecyclesPerSecond: round(run.completed / (run.wallMs / 1000), 2),
        writeTransactionsPerLifecycle: round(measured.writeTransactions / done, 2),
        controlPlaneWriteTransactionsPerLifecycle: round(
          (measured.writeTransactions - providerWrites) / done,
          2,
        ),
        writeCommitsPerSecond: round(measured.writeTransactions / (run.wallMs / 1000), 1),
        otherDatabaseCommits: measured.otherDatabaseCommits,
        cpuMsPerLifecycle: {
          engine: round((cpu.user + cpu.system) / 1000 / done, 2),
          postgres: round((measured.cpuMs['postgres'] ?? 0) / done, 2),
        },
        latencyMs: run.samples.summaries(),
      });
    }
    return points;
  } finally {
    await probe?.close();
    await engine.close();
  }
}

type Timed = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** Register → Workspace volume → provision, through the services; each step through `timed`. */
export async function provisionEnvironment(h: Harness, key: string, timed: Timed = (_, fn) => fn()) {
  const caller: Caller = { tenantId: TENANT, subject: SUBJECT };
  const { lifecycle, sandbox, workspaces } = h.services;
  const { view } = await timed('register', () =>
    lifecycle.register(caller, { projectId: PROJECT, runId: RUN, idempotencyKey: key }),
  );
  const address = { projectId: PROJECT, runId: RUN, environmentId: view.environmentId };
  const { volume } = await timed('workspace', () => workspaces.createVolume(caller, address, 'ws-1'));
  const lease = await timed('provision', () =>
    sandbox.provision(caller, address, {
      idempotencyKey: 'prov-1',
      workspace: {
        volumeId: volume.volumeId,
        resourceGeneration: volume.resourceGeneration,
        dataGeneration: volume.dataGeneration,
        mountPath: '/workspace',
        readOnly: false,
      },
      networkPolicyGeneration: 1,
    }),
  );
  return { caller, address, lease };
}

export interface DriveRun {
  completed: number;
  errors: string[];
  wallMs: number;
  samples: Samples;
}

/** `n` whole lifecycles, `clients` at a time, through the services (waits long-poll unless `waitMs` is 0). */
export async function drive(
  h: Harness,
  o: { n: number; clients: number; pollMs: number; waitMs: number; tag: string; label: string },
): Promise<DriveRun> {
  const { lifecycle, sandbox } = h.services;
  const samples = new Samples();
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await fn();
    samples.add(name, performance.now() - started);
    return value;
  };
  const one = async (index: number) => {
    const started = performance.now();
    const deadline = started + 120_000;
    const { caller, address, lease } = await provisionEnvironment(h, `${o.tag}-${index}`, timed);
    const provisioned = performance.now();
    let active = false;
    // Event-driven like the HTTP client: a long-poll past the revision last seen, or, with
    // `waitMs` 0, a read every `pollMs`.
    // The provision's answer names the revision that wrote the lease: the first wait is past it.
    let after: number = lease.revision;
    for (;;) {
      const wait: WaitOptions | undefined = o.waitMs > 0 ? { waitMs: o.waitMs, after } : undefined;
      const seen = await timed('inspect', () => sandbox.inspect(caller, address, 1, wait));
      after = seen.environmentRevision;
      if (!active && seen.lease.state === 'Active') {
        active = true;
        samples.add('provision→Active', performance.now() - provisioned);
      }
      if (seen.readyForDispatch) break;
      if (performance.now() > deadline) throw new Error(`inspect: not ready in time (${seen.lease.state})`);
      if (wait === undefined) await sleep(o.pollMs);
    }
    samples.add('provision→ready', performance.now() - provisioned);
    const released = await timed('release', () =>
      lifecycle.release(caller, address, { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' }),
    );
    // From the release's answer, as over HTTP.
    const releasing = performance.now();
    let { state, revision } = released;
    while (state !== 'Released') {
      if (performance.now() > deadline) throw new Error(`lifecycle: not Released in time (${state})`);
      const wait = o.waitMs > 0 ? { waitMs: o.waitMs, after: revision } : undefined;
      if (wait === undefined) await sleep(o.pollMs);
      ({ state, revision } = await timed('read lifecycle', () => lifecycle.read(caller, address, wait)));
    }
    samples.add('release→Released', performance.now() - releasing);
    samples.add('whole lifecycle', performance.now() - started);
  };
  const bar = progress(o.label, o.n);
  let next = 0;
  let completed = 0;
  let failures = 0;
  const errors: string[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(o.clients, o.n) }, async () => {
      while (next < o.n) {
        const index = next++;
        try {
          await one(index);
          completed++;
        } catch (error) {
          failures++;
          if (errors.length < 20) errors.push(error instanceof Error ? error.message : String(error));
        }
        bar.tick(completed + failures);
      }
    }),
  );
  const wallMs = performance.now() - started;
  bar.done(failures === 0 ? undefined : `(${failures} failed)`);
  return { completed, errors, wallMs, samples };
}
