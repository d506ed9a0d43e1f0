import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EnvironmentNotFoundError,
  MachineVersionUnsupportedError,
  SnapshotQuarantinedError,
  StaleFenceError,
} from '../../actors/errors.ts';
import { ActorRuntime } from '../../actors/runtime.ts';
import { readEnvironment } from '../../store/environments.ts';
import { readJournal } from '../../store/journal.ts';
import { migrate } from '../../store/migrate.ts';
import { readOutbox } from '../../store/outbox.ts';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import {
  counterDefinition,
  counterIdentity,
  counterMachine,
  type CounterEvent,
} from '../support/counter-machine.ts';

const ctx = { actor: 'test' };

describe.each(backends)('actor runtime (%s)', (backend) => {
  let handle: BackendHandle;
  let runtime: ActorRuntime<CounterEvent>;

  beforeAll(async () => {
    handle = await openBackend(backend);
    await migrate(handle.db);
    runtime = new ActorRuntime({ db: handle.db, definition: counterDefinition() });
  });
  afterAll(() => handle.close());

  it('writes snapshot, revision, journal and one outbox row per declared effect in one step', async () => {
    const handed: unknown[] = [];
    const rt = new ActorRuntime({
      db: handle.db,
      definition: counterDefinition(),
      onEffects: (rows) => handed.push(...rows),
    });
    await rt.create(counterIdentity('c-effects'), undefined, ctx);
    const outcome = await rt.send('c-effects', { type: 'add', amount: 5, id: 'e1' }, ctx);
    expect(outcome.accepted).toBe(true);
    expect(outcome.accepted && outcome.effects.map((e) => [e.kind, e.payload])).toEqual([
      ['announce', { count: 5 }],
    ]);
    expect(handed).toHaveLength(1);
    const row = await readEnvironment(handle.db, 'c-effects');
    expect(row?.revision).toBe(2);
    expect((await readOutbox(handle.db, 'c-effects')).map((o) => [o.revision, o.kind])).toEqual([
      [2, 'announce'],
    ]);
    expect((await readJournal(handle.db, 'c-effects')).map((j) => [j.revision, j.eventType])).toEqual([
      [1, 'xstate.init'],
      [2, 'add'],
    ]);
  });

  it('writes nothing for an event the machine ignores', async () => {
    const machine = counterMachine();
    const rt = new ActorRuntime<CounterEvent | { type: 'noise' }>({
      db: handle.db,
      definition: { ...counterDefinition(), machine },
    });
    await rt.create(counterIdentity('c-ignored'), undefined, ctx);
    const outcome = await rt.send('c-ignored', { type: 'noise' }, ctx);
    expect(outcome.accepted).toBe(false);
    expect((await readEnvironment(handle.db, 'c-ignored'))?.revision).toBe(1);
    expect(await readJournal(handle.db, 'c-ignored')).toHaveLength(1);
  });

  it('rejects a stale fence before the machine runs and changes nothing', async () => {
    await runtime.create(counterIdentity('c-fence'), undefined, ctx);
    await runtime.send('c-fence', { type: 'bump', expectedGeneration: 1 }, ctx);
    await expect(
      runtime.send('c-fence', { type: 'bump', expectedGeneration: 1 }, ctx),
    ).rejects.toBeInstanceOf(StaleFenceError);
    const row = await readEnvironment(handle.db, 'c-fence');
    expect([row?.revision, row?.lifecycleGeneration]).toEqual([2, 2]);
  });

  it('rolls back the whole step when the pre-commit check throws', async () => {
    await runtime.create(counterIdentity('c-rollback'), undefined, ctx);
    const refuse = {
      actor: 'test',
      beforeCommit: () => Promise.reject(new Error('authority revoked')),
    };
    await expect(runtime.send('c-rollback', { type: 'add', amount: 1, id: 'x' }, refuse)).rejects.toThrow(
      'authority revoked',
    );
    expect((await readEnvironment(handle.db, 'c-rollback'))?.revision).toBe(1);
    expect(await readOutbox(handle.db, 'c-rollback')).toEqual([]);
    expect(await readJournal(handle.db, 'c-rollback')).toHaveLength(1);
  });

  it('reports an unknown Environment', async () => {
    await expect(runtime.send('nope', { type: 'flip', id: 'x' }, ctx)).rejects.toBeInstanceOf(
      EnvironmentNotFoundError,
    );
  });

  it('migrates an old snapshot on read', async () => {
    const v1 = new ActorRuntime({ db: handle.db, definition: counterDefinition() });
    await v1.create(counterIdentity('c-migrate'), undefined, ctx);
    await v1.send('c-migrate', { type: 'add', amount: 3, id: 'a' }, ctx);
    // Version 2 renamed the states; its migration maps the old names.
    const rename: Record<string, string> = { Even: 'Level', Odd: 'Uneven' };
    const v2 = new ActorRuntime({
      db: handle.db,
      definition: counterDefinition({
        machine: counterMachine({ a: 'Level', b: 'Uneven' }),
        version: 2,
        migrations: {
          1: (s) => {
            const snap = s as { value: { lifecycle: string } };
            return { ...snap, value: { lifecycle: rename[snap.value.lifecycle] } };
          },
        },
      }),
    });
    const outcome = await v2.send('c-migrate', { type: 'flip', id: 'f' }, ctx);
    expect(outcome.snapshot.value).toEqual({ lifecycle: 'Uneven' });
    expect(outcome.snapshot.context).toMatchObject({ count: 3 });
    const row = await readEnvironment(handle.db, 'c-migrate');
    expect([row?.machineVersion, row?.lifecycleState]).toEqual([2, 'Uneven']);
    // The old binary now meets a newer snapshot: it must refuse, not quarantine or overwrite.
    await expect(v1.send('c-migrate', { type: 'flip', id: 'g' }, ctx)).rejects.toBeInstanceOf(
      MachineVersionUnsupportedError,
    );
    expect((await readEnvironment(handle.db, 'c-migrate'))?.quarantinedAt).toBeNull();
  });

  it('quarantines a snapshot that does not restore, and never resets it', async () => {
    await runtime.create(counterIdentity('c-broken'), undefined, ctx);
    await handle.db.query(
      `UPDATE environments SET snapshot = jsonb_set(snapshot, '{value,lifecycle}', '"Vanished"') WHERE environment_id = 'c-broken'`,
    );
    const before = await readEnvironment(handle.db, 'c-broken');
    await expect(runtime.send('c-broken', { type: 'flip', id: 'x' }, ctx)).rejects.toBeInstanceOf(
      SnapshotQuarantinedError,
    );
    const after = await readEnvironment(handle.db, 'c-broken');
    expect(after?.quarantinedAt).not.toBeNull();
    expect(after?.quarantineReason).toMatch(/restore/);
    expect(after?.snapshot).toEqual(before?.snapshot);
    expect(after?.revision).toBe(before?.revision);
    // Later events are refused without another restore attempt.
    await expect(runtime.send('c-broken', { type: 'add', amount: 1, id: 'y' }, ctx)).rejects.toBeInstanceOf(
      SnapshotQuarantinedError,
    );
  });
});
