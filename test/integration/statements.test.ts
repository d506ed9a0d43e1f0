// Statements per transition of the actor protocol, counted on the wire's side of the Database
// interface: a plain accepted event is the lock-and-read and one commit statement (plus BEGIN and
// COMMIT), whatever it journals and however many outbox rows it writes. And the one-round-trip
// lock-and-read still reads the row as the previous lock holder committed it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActorRuntime } from '../../actors/runtime.ts';
import type { Database, Queryable } from '../../store/db.ts';
import { lockAndReadEnvironment, readEnvironment } from '../../store/environments.ts';
import { readJournal } from '../../store/journal.ts';
import { migrate } from '../../store/migrate.ts';
import { readOutbox } from '../../store/outbox.ts';
import { backends, isolatedPostgres, openBackend, type BackendHandle } from '../support/databases.ts';
import { counterDefinition, counterIdentity, type CounterEvent } from '../support/counter-machine.ts';

/** The same database; counts the statements run inside transactions. */
function counting(db: Database): { db: Database; statements: string[] } {
  const statements: string[] = [];
  const tx = (inner: Queryable): Queryable => ({
    query: (sql, params) => {
      statements.push(sql);
      return inner.query(sql, params);
    },
    exec: (sql) => {
      statements.push(sql);
      return inner.exec(sql);
    },
  });
  return {
    statements,
    db: { ...db, transaction: (fn) => db.transaction((inner) => fn(tx(inner))) },
  };
}

const ctx = { actor: 'test' };

describe.each(backends)('statements per transition (%s)', (backend) => {
  let handle: BackendHandle;
  let runtime: ActorRuntime<CounterEvent>;
  let statements: string[];

  beforeAll(async () => {
    handle = await openBackend(backend);
    await migrate(handle.db);
    const counted = counting(handle.db);
    statements = counted.statements;
    runtime = new ActorRuntime({ db: counted.db, definition: counterDefinition() });
  });
  afterAll(() => handle.close());

  async function count(work: () => Promise<unknown>): Promise<number> {
    statements.length = 0;
    await work();
    return statements.length;
  }

  it('a plain accepted event is two statements inside its transaction', async () => {
    await runtime.create(counterIdentity('s-plain'), undefined, ctx);
    expect(await count(() => runtime.send('s-plain', { type: 'flip', id: 'f1' }, ctx))).toBe(2);
    expect((await readEnvironment(handle.db, 's-plain'))?.revision).toBe(2);
    const journal = await readJournal(handle.db, 's-plain');
    expect(journal.map((j) => [j.revision, j.eventType, j.fromState, j.toState])).toEqual([
      [1, 'xstate.init', null, { lifecycle: 'Even' }],
      [2, 'flip', { lifecycle: 'Even' }, { lifecycle: 'Odd' }],
    ]);
  });

  it('an event with an effect is still two: the outbox row rides in the commit statement', async () => {
    await runtime.create(counterIdentity('s-effect'), undefined, ctx);
    const outcome = await (async () => {
      statements.length = 0;
      return runtime.send('s-effect', { type: 'add', amount: 3, id: 'a1' }, ctx);
    })();
    expect(statements).toHaveLength(2);
    expect(outcome.accepted && outcome.effects.map((e) => [e.revision, e.kind, e.payload])).toEqual([
      [2, 'announce', { count: 3 }],
    ]);
    const outbox = await readOutbox(handle.db, 's-effect');
    expect(outbox.map((o) => [o.outboxId, o.revision, o.kind, o.payload, o.attemptId])).toEqual(
      outcome.accepted ? outcome.effects.map((e) => [e.outboxId, 2, 'announce', { count: 3 }, null]) : [],
    );
  });

  it('an accepted fence bump is two; a stale fence is refused after the lock-and-read alone', async () => {
    await runtime.create(counterIdentity('s-ignored'), undefined, ctx);
    const before = await readEnvironment(handle.db, 's-ignored');
    expect(await count(() => runtime.send('s-ignored', { type: 'bump', expectedGeneration: 1 }, ctx))).toBe(
      2,
    );
    statements.length = 0;
    await expect(runtime.send('s-ignored', { type: 'bump', expectedGeneration: 1 }, ctx)).rejects.toThrow();
    expect(statements).toHaveLength(1);
    expect((await readEnvironment(handle.db, 's-ignored'))?.revision).toBe((before?.revision ?? 0) + 1);
  });
});

describe('lock-and-read in one round trip (postgres)', () => {
  it('reads the revision the previous lock holder committed while it waited', async () => {
    const iso = await isolatedPostgres();
    try {
      const a = iso.open(2);
      const b = iso.open(2);
      await migrate(a);
      const runtime = new ActorRuntime({ db: a, definition: counterDefinition() });
      await runtime.create(counterIdentity('s-fresh'), undefined, ctx);

      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const first = a.transaction(async (tx) => {
        await lockAndReadEnvironment(tx, 's-fresh');
        locked();
        await held;
        await tx.query(`UPDATE environments SET revision = 7 WHERE environment_id = 's-fresh'`);
      });
      await lockTaken;
      const second = b.transaction((tx) => lockAndReadEnvironment(tx, 's-fresh'));
      // The second reader is blocked on the lock (no answer yet); then the holder commits.
      const early = await Promise.race([second.then(() => 'answered'), delay(200).then(() => 'waiting')]);
      expect(early).toBe('waiting');
      release();
      await first;
      expect((await second)?.revision).toBe(7);
    } finally {
      await iso.drop();
    }
  });
});

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
