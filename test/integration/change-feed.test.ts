// Commits announced over Redis wake a long-poll read in another process: two harnesses (two pools,
// two runtimes, one PostgreSQL schema), the waiting side's shared revision read switched off, so
// only the announcement can wake it. A malformed announcement is ignored.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentChanges } from '../../actors/wait.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { readEnvironment } from '../../store/environments.ts';
import { migrate } from '../../store/migrate.ts';
import { parseAnnouncement, startChangeFeed, type ChangeFeed } from '../../workers/change-feed.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';
import { redisUrl, silentLogger, uniquePrefix } from './workers-support.ts';

const base = '/api/projects/checkout/runs/run-1/environments';

describe('the change feed', () => {
  let iso: IsolatedPostgres;
  let one: Harness;
  let two: Harness;
  let alice: string;
  const feeds: ChangeFeed[] = [];

  beforeAll(async () => {
    iso = await isolatedPostgres();
    const key = randomBytes(32);
    const a = iso.open();
    await migrate(a);
    await migrateSimulated(a);
    one = await buildHarness(a, { key, migrated: true, workers: false });
    two = await buildHarness(iso.open(), { key, migrated: true, workers: false });
    await seedProject(one, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'alice' });
    alice = await one.token('acme', 'alice');
  });
  afterAll(async () => {
    for (const feed of feeds) await feed.close();
    await one.close();
    await two.close();
    await iso.drop();
  });

  it("wakes a waiting read in one process at another process's commit", async () => {
    // The shared revision read ticks once an hour: within this test only an announcement wakes.
    const changes = new EnvironmentChanges({ db: one.db, runtime: one.runtime, watchEveryMs: 3_600_000 });
    const prefix = uniquePrefix();
    feeds.push(
      await startChangeFeed({
        redis: redisUrl(),
        prefix,
        runtime: one.runtime,
        onChange: (id, revision) => changes.announce(id, revision),
        logger: silentLogger,
      }),
      await startChangeFeed({ redis: redisUrl(), prefix, runtime: two.runtime, logger: silentLogger }),
    );
    const registered = await one.request('POST', base, { token: alice, body: { idempotencyKey: 'feed-1' } });
    const env = (await registered.json()) as { environmentId: string; revision: number };
    let woke = false;
    const waiting = changes
      .readAfterChange(
        env.environmentId,
        { waitMs: 25_000, after: env.revision },
        () => readEnvironment(one.db, env.environmentId),
        (row) => row?.revision ?? 0,
      )
      .then((row) => {
        woke = true;
        return row;
      });
    const released = await two.request('POST', `${base}/${env.environmentId}/release`, {
      token: alice,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'feed-release' },
    });
    // With no lease the release completes in its own commit (200).
    expect(released.status).toBe(200);
    const row = await waiting;
    expect(woke).toBe(true);
    expect(row?.revision).toBeGreaterThan(env.revision);
    expect(row?.lifecycleState).toBe('Released');
  });

  it('reads an announcement as "<environmentId> <revision>" and ignores anything else', () => {
    expect(parseAnnouncement('env_abc 7')).toEqual({ environmentId: 'env_abc', revision: 7 });
    for (const bad of ['', 'env_abc', ' 7', 'env_abc x', 'env_abc 0', 'env_abc -1', 'env_abc 1.5']) {
      expect(parseAnnouncement(bad)).toBeNull();
    }
  });
});
