// `sandlot worker`'s probe listener (SANDLOT_WORKER_HEALTH_HOST/PORT), on real PostgreSQL and Redis.
// The process is started as the worker Deployment starts it, with Redis behind a gate the test
// holds: shut, Redis never answers the handshake, so the workers cannot start; open, they do; cut,
// every connection drops. /healthz answers 200 throughout (liveness never follows the database or
// Redis); /readyz answers 503 with its reasons until all of them are usable, and again when one is
// not. The host's own check (workers/host.ts) is also asked directly for the database and for a
// closed host.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../workers/host.ts';
import { databaseUrlFor, startWorkerProcess, type WorkerProcess } from '../support/chaos-worker.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { fakeAudience, fakeIssuer, startFakeServices, type FakeServices } from '../support/fake-services.ts';
import { buildHarness } from '../support/harness.ts';
import { startTcpGate, type TcpGate } from '../support/tcp-gate.ts';
import { deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from './workers-support.ts';

const REDIS = new URL(redisUrl(0));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

interface Probe {
  status: number;
  body: { status: string; reasons?: string[] };
}

async function probe(url: string): Promise<Probe | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: (await res.json()) as Probe['body'] };
  } catch {
    return null;
  }
}

/** Asks `url` until it answers `status`, and returns that answer. */
async function probeUntil(url: string, status: number, what: string): Promise<Probe> {
  let last: Probe | null = null;
  await waitFor(
    async () => {
      last = await probe(url);
      return last?.status === status;
    },
    { timeoutMs: 20_000, what: `${what} (last answer: ${JSON.stringify(last)})` },
  );
  return last!;
}

describe('sandlot worker: /healthz and /readyz', () => {
  const prefix = uniquePrefix();
  let pg: IsolatedPostgres;
  let gate: TcpGate;
  let services: FakeServices;
  let child: WorkerProcess | undefined;
  let base: string;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    gate = await startTcpGate({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    services = await startFakeServices();
    base = `http://127.0.0.1:${await freePort()}`;
  });
  afterAll(async () => {
    if (child !== undefined && !child.exited) await child.stop('SIGKILL');
    await gate?.close();
    await services?.close();
    await deleteKeys(REDIS.toString(), prefix);
    await pg?.drop();
  });

  it('is live but not ready before the workers start, ready once Redis answers, unready when it drops', async () => {
    // The ready line is printed only once the workers run, which needs Redis: not awaited yet.
    const starting = startWorkerProcess(
      {
        DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
        REDIS_URL: `redis://127.0.0.1:${gate.port}/0`,
        SANDLOT_BULLMQ_PREFIX: prefix,
        SANDLOT_MIGRATE_ON_START: 'true',
        SANDLOT_JWT_ISSUER: fakeIssuer,
        SANDLOT_JWT_AUDIENCE: fakeAudience,
        SANDLOT_JWKS_URL: services.jwksUrl,
        SANDLOT_PROJECTS_URL: services.projectsUrl,
        SANDLOT_RUN_SELECTION_URL: services.runSelectionUrl,
        SANDLOT_WORKER_HEALTH_HOST: '127.0.0.1',
        SANDLOT_WORKER_HEALTH_PORT: new URL(base).port,
        LOG_LEVEL: 'warn',
      },
      { readyTimeoutMs: 60_000 },
    );
    starting.catch(() => undefined);

    await probeUntil(`${base}/healthz`, 200, 'the health listener');
    const before = await probe(`${base}/readyz`);
    expect(before).toEqual({ status: 503, body: { status: 'not-ready', reasons: ['workers are starting'] } });

    gate.open();
    child = await starting;
    const ready = await probeUntil(`${base}/readyz`, 200, 'readiness once Redis answers');
    expect(ready.body).toEqual({ status: 'ready' });

    gate.cut();
    const cut = await probeUntil(`${base}/readyz`, 503, 'unreadiness once Redis dropped');
    expect(cut.body.status).toBe('not-ready');
    expect(cut.body.reasons?.some((r) => /^redis connection for .* is (?!ready)/.test(r))).toBe(true);
    expect(await probe(`${base}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });

    gate.open();
    await probeUntil(`${base}/readyz`, 200, 'readiness once Redis is back');

    const stopped = await child.stop('SIGTERM');
    expect(stopped, `the worker's exit after SIGTERM; its output:\n${child.output()}`).toEqual({
      code: 0,
      signal: null,
    });
    expect(await probe(`${base}/healthz`)).toBeNull();
  }, 120_000);
});

describe("the worker host's own readiness check", () => {
  it('names the database when it does not answer, and a closed host as stopped', async () => {
    const pg = await isolatedPostgres();
    try {
      const h = await buildHarness(pg.open(), { workers: false });
      const host = await startWorkers(
        { db: h.db, runtime: h.runtime, provider: h.provider, logger: silentLogger },
        { reconcileEveryMs: 60_000, observeEveryMs: 60_000, pruneEveryMs: 60_000 },
      );
      expect(await host.unreadiness()).toEqual([]);
      const down = pg.open(1);
      await down.close();
      const other = await startWorkers(
        { db: down, runtime: h.runtime, provider: h.provider, logger: silentLogger },
        { reconcileEveryMs: 60_000, observeEveryMs: 60_000, pruneEveryMs: 60_000, processEffects: false },
      );
      expect(await other.unreadiness()).toEqual([expect.stringMatching(/^database does not answer: /)]);
      await other.close();
      await host.close();
      expect(await host.unreadiness()).toEqual(['workers are stopped']);
      await h.close();
    } finally {
      await pg.drop();
    }
  });
});
