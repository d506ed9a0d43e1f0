// A PostgreSQL restart or outage costs the requests in flight a 503 problem, never the process:
// a transaction held open across `pg_ctl restart -m fast` (57P01 on its connection) and requests
// while the server is down answer 503 database-unavailable with Retry-After, /readyz answers 503
// until the server is back, and then a whole lease lifecycle completes with the same process,
// pool and workers. Runs against a PostgreSQL server of its own, never the shared one.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller, Permission, ProjectsAuthority } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { GrantsAuthority } from '../../store/grants.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';
import { startScratchPostgres, type ScratchPostgres } from '../support/scratch-postgres.ts';

const haveServer = existsSync('/usr/lib/postgresql');

/** The grants table, but an in-transaction recheck can be held open on demand. */
class HoldableAuthority implements ProjectsAuthority {
  #gate: Promise<void> | null = null;
  #open: () => void = () => undefined;
  waiting = false;
  constructor(private readonly inner: ProjectsAuthority) {}

  hold(): void {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }

  release(): void {
    this.#gate = null;
    this.#open();
  }

  async permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>> {
    if (via !== undefined && this.#gate !== null) {
      this.waiting = true;
      await this.#gate;
    }
    return this.inner.permissions(caller, projectId, via);
  }
}

describe.skipIf(!haveServer)('database restart', () => {
  let server: ScratchPostgres;
  let h: Harness;
  let authority: HoldableAuthority;
  const lost: Error[] = [];

  beforeAll(async () => {
    const started = await startScratchPostgres();
    if (started === null) throw new Error('no PostgreSQL server binaries');
    server = started;
    const db = createPgDatabase({ connectionString: server.url, onConnectionLost: (e) => lost.push(e) });
    authority = new HoldableAuthority(new GrantsAuthority(db));
    h = await buildHarness(db, { authority, workers: {} });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await h?.db.close();
    await server?.remove();
  });

  it('answers 503 while it restarts, stays up, and completes a lifecycle afterwards', async () => {
    const s = await setupScenario(h, { run: 'run-restart' });

    // A release whose in-commit authority recheck holds its transaction open across the restart.
    authority.hold();
    const inFlight = h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-during-restart' },
    });
    await eventually('the release to wait inside its transaction', () =>
      Promise.resolve(authority.waiting ? true : undefined),
    );
    await server.restart();
    authority.release();
    const answer = await inFlight;
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(await answer.json()).toMatchObject({
      type: 'urn:sandlot:problem:database-unavailable',
      status: 503,
    });
    expect(lost.length).toBeGreaterThan(0);

    // While the server is down: 503 problems, and /readyz says not ready.
    await server.stop();
    const read = await h.request('GET', `${s.base}/lifecycle`, { token: s.token });
    expect(read.status).toBe(503);
    expect(await read.json()).toMatchObject({ type: 'urn:sandlot:problem:database-unavailable' });
    expect((await h.request('GET', '/readyz')).status).toBe(503);
    await server.start();
    await eventually('/readyz to answer 200', async () =>
      (await h.request('GET', '/readyz')).status === 200 ? true : undefined,
    );

    // Nothing of the failed release was committed, and the same process carries on.
    expect(await json(await h.request('GET', `${s.base}/lifecycle`, { token: s.token }))).toMatchObject({
      state: 'Registered',
    });
    const provision = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provision.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const release = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-after' },
    });
    expect(release.status).toBe(202);
    await waitForLifecycle(h, s, 'Released');
  }, 120_000);
});
