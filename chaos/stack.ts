// Everything a chaos run runs against, all on 127.0.0.1 and all its own: a PostgreSQL server
// (test/support/scratch-postgres.ts: own data directory and port, restartable), a redis-server,
// the stand-ins for the JWKS, Projects and run selection (test/support/fake-services.ts), and the
// Sandlot processes: APIs (`serve --no-workers`) and workers, in production mode, each with the
// simulated provider's fault plan under a seed of its own per incarnation.
import { readFileSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createPgDatabase } from '../store/pg-database.ts';
import type { Database } from '../store/db.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import { allPermissions, buildHarness } from '../test/support/harness.ts';
import { repoRoot } from '../test/support/chaos-worker.ts';
import {
  fakeAudience,
  fakeIssuer,
  startFakeServices,
  type FakeServices,
} from '../test/support/fake-services.ts';
import { startScratchPostgres, type ScratchPostgres } from '../test/support/scratch-postgres.ts';
import { onLeak } from './cleanup.ts';
import type { ApiEndpoint, Disruptions } from './client.ts';
import { prepareChildEntry, type ChildEntry } from './entry.ts';
import type { ChaosOptions } from './options.ts';
import { freePort } from '../test/support/scratch-postgres.ts';
import { ManagedProcess, type Crash } from './processes.ts';
import { startChaosKube, type ChaosKube } from './kube.ts';
import { providerFaultPlan } from './provider-faults.ts';
import { deriveSeed } from './random.ts';
import { startOwnRedis, type OwnRedis } from './redis-server.ts';
import { apiName, workerName } from './schedule.ts';

export const TENANT = 'acme';
export const PROJECT = 'chaos';
export const RUN = 'run-chaos';
const SUBJECT = 'alice';
export const ENVIRONMENTS = `/api/projects/${PROJECT}/runs/${RUN}/environments`;

/** How long after a kill, or after the process is back, a connection error is the kill's doing. */
const DISRUPTION_GRACE_MS = 3_000;
/** How long after PostgreSQL is back a 503 database-unavailable is still the restart's doing. */
const PG_GRACE_MS = 10_000;

export interface ChaosStack {
  pg: ScratchPostgres;
  redis: OwnRedis;
  fake: FakeServices;
  /** The harness's own pool on the run's database (probes, recovery times, end checks). */
  db: Database;
  entry: ChildEntry;
  apis: ManagedProcess[];
  workers: ManagedProcess[];
  endpoints: ApiEndpoint[];
  disruptions: Disruptions & {
    processDown(name: string, at: number, why: 'killed' | 'crashed'): void;
    processUp(name: string, at: number): void;
    /** Opens a restart window at `start`; `close` sets its end. */
    pgRestart(start: number): { close(end: number): void };
  };
  /** The fake Kubernetes API (`--provider agent-sandbox`), else null. */
  kube: ChaosKube | null;
  /** Child environment for one-off commands (`sandlot audit`). */
  commandEnv: Record<string, string>;
  runDir: string;
  logDir: string;
  faultDir: string;
  crashes: Crash[];
  token(): string;
  close(): Promise<void>;
}

export async function startStack(
  options: ChaosOptions,
  runDir: string,
  onCrash: (crash: Crash) => void,
  status: (line: string) => void,
): Promise<ChaosStack | { skipped: string }> {
  // The build (if one is due) runs while PostgreSQL, Redis and the database are set up.
  const entering = prepareChildEntry(options.entry, status);
  entering.catch(() => undefined); // awaited below; a failure before that must not go unhandled
  const pg = await startScratchPostgres();
  if (pg === null) {
    await entering.catch(() => undefined);
    return { skipped: 'no PostgreSQL server binaries under /usr/lib/postgresql (initdb, pg_ctl)' };
  }
  const closers: (() => Promise<void>)[] = [() => pg.remove()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  };
  try {
    status(`PostgreSQL of the run's own at ${pg.url}`);
    const redis = await startOwnRedis();
    closers.push(() => redis.stop());
    status(`redis-server of the run's own at ${redis.url}`);

    const db = createPgDatabase({ connectionString: pg.url, max: 4, onConnectionLost: () => undefined });
    closers.push(() => db.close());
    closers.push(leakGuard(await dataDirectory(db)));
    let kube: ChaosKube | null = null;
    if (options.provider === 'agent-sandbox') {
      const started = await startChaosKube(runDir, TENANT, PROJECT, db);
      if (typeof started === 'string') {
        await closeAll();
        await entering.catch(() => undefined);
        return { skipped: started };
      }
      kube = started;
      closers.push(() => started.close());
      status(`fake Kubernetes API of the run's own, Agent Sandbox adapter in every child`);
    }
    const identity = await seedDatabase(db, kube?.provider);

    const fake = await startFakeServices();
    closers.push(() => fake.close());
    fake.grant(TENANT, PROJECT, SUBJECT, allPermissions);
    fake.setSelection(TENANT, PROJECT, RUN, [{ ...identity, exclusive: true }]);
    let token = await fake.sign({ sub: SUBJECT, tenant: TENANT });
    const refresh = setInterval(() => {
      void fake.sign({ sub: SUBJECT, tenant: TENANT }).then((fresh) => (token = fresh));
    }, 120_000);
    closers.push(() => Promise.resolve(clearInterval(refresh)));

    const entry = await entering;
    status(`children run ${entry.note}`);
    const logDir = join(runDir, 'logs');
    const faultDir = join(runDir, 'faults');
    await mkdir(logDir, { recursive: true });
    await mkdir(faultDir, { recursive: true });

    const commandEnv: Record<string, string> = {
      DATABASE_URL: pg.url,
      REDIS_URL: redis.url,
      SANDLOT_BULLMQ_PREFIX: 'chaos',
      SANDLOT_JWT_ISSUER: fakeIssuer,
      SANDLOT_JWT_AUDIENCE: fakeAudience,
      SANDLOT_JWKS_URL: fake.jwksUrl,
      SANDLOT_PROJECTS_URL: fake.projectsUrl,
      SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
      SANDLOT_MIGRATE_ON_START: 'false',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...kube?.env,
    };
    // On Agent Sandbox the fake Kubernetes API injects the provider's faults (chaos/kube.ts).
    const plan = kube === null ? { SANDLOT_SIMULATED_FAULTS: JSON.stringify(providerFaultPlan()) } : {};
    const childEnv = (name: string) => (incarnation: number) => ({
      ...commandEnv,
      SANDLOT_CALL_TIMEOUT_MS: String(options.callTimeoutMs),
      SANDLOT_QUEUE_LOCK_MS: '1000',
      SANDLOT_RECONCILE_EVERY_MS: '500',
      SANDLOT_OBSERVE_EVERY_MS: '10000',
      SANDLOT_WORKER_CONCURRENCY: '16',
      ...plan,
      SANDLOT_SIMULATED_SEED: String(deriveSeed(options.seed, 'provider', name, incarnation)),
      CHAOS_SANDLOT_MAIN: entry.main,
      CHAOS_FAULT_LOG: join(faultDir, `${name}.${incarnation}.jsonl`),
    });
    const script = join(repoRoot, 'chaos', 'child-entry.js');
    const crashes: Crash[] = [];
    const crashed = (crash: Crash) => {
      crashes.push(crash);
      onCrash(crash);
    };
    const apis: ManagedProcess[] = [];
    const endpoints: ApiEndpoint[] = [];
    for (let i = 0; i < options.apis; i++) {
      const port = await freePort();
      const name = apiName(i);
      apis.push(
        new ManagedProcess(
          {
            name,
            role: 'api',
            args: ['serve', '--no-workers', '--port', String(port)],
            env: childEnv(name),
            ready: /sandlot listening on/,
          },
          script,
          logDir,
          crashed,
        ),
      );
      endpoints.push({ name, url: `http://127.0.0.1:${port}` });
    }
    const workers = Array.from({ length: options.workers }, (_, i) => {
      const name = workerName(i);
      return new ManagedProcess(
        { name, role: 'worker', args: ['worker'], env: childEnv(name), ready: /sandlot worker running/ },
        script,
        logDir,
        crashed,
      );
    });
    closers.push(async () => {
      await Promise.all([...apis, ...workers].map((p) => p.stop()));
    });
    const starting = Date.now();
    await Promise.all(
      [...apis, ...workers].map(async (p) => {
        await p.start();
        status(`${p.name} ready in ${((Date.now() - starting) / 1000).toFixed(1)} s (pid ${p.pid})`);
      }),
    );

    const downs = new Map<string, { from: number; to: number; why: 'killed' | 'crashed' }[]>();
    const pgWindows: [number, number][] = [];
    const disruptions: ChaosStack['disruptions'] = {
      processDown(name, at, why) {
        downs.set(name, [...(downs.get(name) ?? []), { from: at, to: Number.POSITIVE_INFINITY, why }]);
      },
      processUp(name, at) {
        const last = downs.get(name)?.at(-1);
        if (last !== undefined) last.to = at;
      },
      apiDisrupted(name, at) {
        const hit = (downs.get(name) ?? []).find(
          (d) => at >= d.from - DISRUPTION_GRACE_MS && at <= d.to + DISRUPTION_GRACE_MS,
        );
        return hit?.why ?? null;
      },
      pgRestart(start) {
        const window: [number, number] = [start, Number.POSITIVE_INFINITY];
        pgWindows.push(window);
        return {
          close(end) {
            window[1] = end;
          },
        };
      },
      inPgRestart(at) {
        return pgWindows.some(([start, end]) => at >= start - 1_000 && at <= end + PG_GRACE_MS);
      },
    };
    return {
      pg,
      redis,
      fake,
      db,
      entry,
      apis,
      workers,
      endpoints,
      disruptions,
      kube,
      commandEnv,
      runDir,
      logDir,
      faultDir,
      crashes,
      token: () => token,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function dataDirectory(db: Database): Promise<string> {
  const { rows } = await db.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`);
  const dir = rows[0]?.dir;
  if (dir === undefined) throw new Error('no data directory');
  return dir;
}

/**
 * If the harness dies with its PostgreSQL running: an immediate shutdown (SIGQUIT to the postmaster,
 * whose PID the data directory names, whichever restart started it) and the directory removed.
 */
function leakGuard(dataDir: string): () => Promise<void> {
  const forget = onLeak(() => {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGQUIT');
    rmSync(dirname(dataDir), { recursive: true, force: true });
  });
  return () => Promise.resolve(forget());
}

/**
 * Migrations, the provider's identity and the project's network policy, through the embedded app on
 * the same database (production mounts no admin routes; the policy registry is our own table).
 */
async function seedDatabase(db: Database, provider?: SandboxProvider): Promise<object> {
  const h = await buildHarness(db, {
    workers: false,
    ...(provider === undefined ? {} : { sandboxProvider: provider }),
  });
  try {
    const operator = await h.token(TENANT, 'ops', { operator: true });
    const identity = (await (
      await h.request('GET', '/admin/provider', { token: operator })
    ).json()) as object;
    const policy = await h.request('PUT', `/admin/tenants/${TENANT}/projects/${PROJECT}/network-policies/1`, {
      token: operator,
      body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
    });
    if (policy.status !== 201 && policy.status !== 200) throw new Error(`network policy: ${policy.status}`);
    return identity;
  } finally {
    await h.close();
  }
}
