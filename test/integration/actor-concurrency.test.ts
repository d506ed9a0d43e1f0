// Several processes (separate pools, separate runtimes) racing on one Environment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActorRuntime } from '../../actors/runtime.ts';
import { readEnvironment } from '../../store/environments.ts';
import { readJournal } from '../../store/journal.ts';
import { migrate } from '../../store/migrate.ts';
import { readOutbox } from '../../store/outbox.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { counterDefinition, counterIdentity, type CounterEvent } from '../support/counter-machine.ts';
import { buildHarness, seedProject } from '../support/harness.ts';

describe('concurrent senders on PostgreSQL', () => {
  let iso: IsolatedPostgres;

  beforeAll(async () => {
    iso = await isolatedPostgres();
    await migrate(iso.open(1));
  });
  afterAll(() => iso.drop());

  it('50 concurrent registrations with one key from separate connections make exactly one Environment', async () => {
    const key = new Uint8Array(32).fill(7);
    const harnesses = await Promise.all(
      Array.from({ length: 10 }, () => buildHarness(iso.open(5), { key, migrated: true })),
    );
    const first = harnesses[0]!;
    await seedProject(first, { tenant: 'acme', project: 'p', run: 'r', subject: 'alice' });
    const token = await first.token('acme', 'alice');
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        harnesses[i % harnesses.length]!.request('POST', '/api/projects/p/runs/r/environments', {
          token,
          body: { idempotencyKey: 'same-key' },
        }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(49);
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<{ environmentId: string }>));
    expect(new Set(bodies.map((b) => b.environmentId)).size).toBe(1);
    const { rows } = await first.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM environments WHERE idempotency_key = 'same-key'`,
    );
    expect(rows[0]?.n).toBe(1);
    expect(await readJournal(first.db, bodies[0]!.environmentId)).toHaveLength(1);
  });

  it('two processes sending interleaved events lose no update and journal every revision', async () => {
    const definition = counterDefinition();
    const a = new ActorRuntime<CounterEvent>({ db: iso.open(4), definition });
    const b = new ActorRuntime<CounterEvent>({ db: iso.open(4), definition });
    await a.create(counterIdentity('race'), undefined, { actor: 'a' });
    const perProcess = 60;
    const send = (rt: ActorRuntime<CounterEvent>, who: string, i: number) =>
      i % 3 === 0
        ? rt.send('race', { type: 'flip', id: `${who}-${i}` }, { actor: who })
        : rt.send('race', { type: 'add', amount: 1, id: `${who}-${i}` }, { actor: who });
    await Promise.all([
      ...Array.from({ length: perProcess }, (_, i) => send(a, 'a', i)),
      ...Array.from({ length: perProcess }, (_, i) => send(b, 'b', i)),
    ]);
    const row = await readEnvironment(iso.open(1), 'race');
    expect(row?.revision).toBe(1 + 2 * perProcess);
    const journal = await readJournal(iso.open(1), 'race');
    expect(journal.map((j) => j.revision)).toEqual(
      Array.from({ length: 1 + 2 * perProcess }, (_, i) => i + 1),
    );
    const adds = 2 * (perProcess - perProcess / 3);
    expect((row?.snapshot as { context: { count: number; seen: string[] } }).context.count).toBe(adds);
    // Every event is in the journal exactly once, and each outbox row belongs to one add.
    const ids = journal.slice(1).map((j) => (j.event as { id: string }).id);
    expect(new Set(ids).size).toBe(2 * perProcess);
    expect(await readOutbox(iso.open(1), 'race')).toHaveLength(adds);
  });

  it('two processes releasing one Environment with different keys: one wins, the other is a conflict', async () => {
    const key = new Uint8Array(32).fill(9);
    const [h1, h2] = await Promise.all([
      buildHarness(iso.open(3), { key, migrated: true }),
      buildHarness(iso.open(3), { key, migrated: true }),
    ]);
    await seedProject(h1, { tenant: 'acme', project: 'q', run: 'r', subject: 'alice' });
    const token = await h1.token('acme', 'alice');
    const registered = await h1.request('POST', '/api/projects/q/runs/r/environments', {
      token,
      body: { idempotencyKey: 'k' },
    });
    const { environmentId } = (await registered.json()) as { environmentId: string };
    const path = `/api/projects/q/runs/r/environments/${environmentId}/release`;
    const [r1, r2] = await Promise.all([
      h1.request('POST', path, { token, body: { expectedLifecycleGeneration: 1, idempotencyKey: 'one' } }),
      h2.request('POST', path, { token, body: { expectedLifecycleGeneration: 1, idempotencyKey: 'two' } }),
    ]);
    expect([r1.status, r2.status].sort()).toEqual([200, 409]);
    const journal = await readJournal(h1.db, environmentId);
    expect(journal.map((j) => j.revision)).toEqual([1, 2]);
  });
});
