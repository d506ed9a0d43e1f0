// The actor protocol: the only way an Environment's state changes. One transaction per event:
// advisory lock → fence check → pure transition → revision CAS → journal row → outbox rows → commit.
// Effects reach workers only through outbox rows written in that same transaction.
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import type { Database, Queryable } from '../store/db.ts';
import {
  insertEnvironment,
  lockEnvironment,
  quarantineEnvironment,
  readEnvironment,
  updateEnvironmentSnapshot,
  type EnvironmentRow,
} from '../store/environments.ts';
import { appendJournal } from '../store/journal.ts';
import { appendOutbox, type OutboxRow } from '../store/outbox.ts';
import type { ActorDefinition, InitEvent } from './definition.ts';
import {
  EnvironmentNotFoundError,
  RevisionConflictError,
  SnapshotQuarantinedError,
  StaleFenceError,
} from './errors.ts';
import { KeyedQueue } from './keyed-queue.ts';
import { restoreSnapshot } from './restore.ts';

export interface CommitContext {
  /** Who caused the change (token subject, or `worker:<id>`); recorded in the journal. */
  actor: string;
  /**
   * Runs inside the transaction after the new state is computed and before commit: authority and
   * selection rechecks. Throwing rolls everything back. Use only `tx` for database reads.
   */
  beforeCommit?: (tx: Queryable, row: EnvironmentRow) => Promise<void>;
}

export type SendOutcome =
  | { accepted: true; row: EnvironmentRow; snapshot: AnyMachineSnapshot; effects: OutboxRow[] }
  /** The machine ignored the event in its current state; nothing was written. */
  | { accepted: false; row: EnvironmentRow; snapshot: AnyMachineSnapshot };

export interface Identity {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  runSelectionHash: string;
}

export interface CreateOutcome {
  created: boolean;
  row: EnvironmentRow;
  effects: OutboxRow[];
}

export interface ActorRuntimeOptions<TEvent extends { type: string }> {
  db: Database;
  definition: ActorDefinition<TEvent>;
  /** Called after commit with the outbox rows the transaction wrote (the queue hand-off). */
  onEffects?: (rows: OutboxRow[]) => void;
}

export class ActorRuntime<TEvent extends { type: string }> {
  readonly #db: Database;
  readonly #definition: ActorDefinition<TEvent>;
  readonly #onEffects: (rows: OutboxRow[]) => void;
  readonly #queue = new KeyedQueue();

  constructor(options: ActorRuntimeOptions<TEvent>) {
    this.#db = options.db;
    this.#definition = options.definition;
    this.#onEffects = options.onEffects ?? (() => undefined);
  }

  /** Creates the actor at revision 1, or returns the existing row (idempotent on the ID). */
  create(identity: Identity, input: unknown, context: CommitContext): Promise<CreateOutcome> {
    return this.#queue.run(identity.environmentId, async () => {
      const outcome = await this.#db.transaction(async (tx) => {
        await lockEnvironment(tx, identity.environmentId);
        const existing = await readEnvironment(tx, identity.environmentId);
        if (existing !== null) {
          await context.beforeCommit?.(tx, existing);
          return { created: false, row: existing, effects: [] };
        }
        const [snapshot, actions] = initialTransition(this.#definition.machine, input);
        const projection = this.#definition.project(snapshot);
        const row = await insertEnvironment(tx, {
          ...identity,
          machineVersion: this.#definition.version,
          snapshot: this.#definition.machine.getPersistedSnapshot(snapshot),
          ...projection,
          createdBy: context.actor,
        });
        if (row === null) throw new RevisionConflictError(identity.environmentId, 0);
        await appendJournal(tx, {
          environmentId: row.environmentId,
          revision: row.revision,
          eventType: 'xstate.init',
          event: { type: 'xstate.init', input },
          fromState: null,
          toState: snapshot.value,
          actor: context.actor,
        });
        const effects = await this.#writeEffects(tx, row, actions, { type: 'xstate.init' });
        await context.beforeCommit?.(tx, row);
        return { created: true, row, effects };
      });
      this.#handOff(outcome.effects);
      return outcome;
    });
  }

  send(environmentId: string, event: TEvent, context: CommitContext): Promise<SendOutcome> {
    return this.#queue.run(environmentId, async () => {
      const result = await this.#db.transaction((tx) =>
        this.#sendInTransaction(tx, environmentId, event, context),
      );
      if ('quarantined' in result) throw new SnapshotQuarantinedError(environmentId, result.quarantined);
      if (result.accepted) this.#handOff(result.effects);
      return result;
    });
  }

  /**
   * The same protocol inside a transaction the caller owns (a worker folding a provider result and
   * its event into one commit). The caller must call `handOff(outcome.effects)` after commit.
   */
  async sendWithin(
    tx: Queryable,
    environmentId: string,
    event: TEvent,
    context: CommitContext,
  ): Promise<SendOutcome> {
    const result = await this.#sendInTransaction(tx, environmentId, event, context);
    if ('quarantined' in result) throw new SnapshotQuarantinedError(environmentId, result.quarantined);
    return result;
  }

  /** Gives committed outbox rows to the queue; the relay re-publishes whatever this misses. */
  handOff(effects: OutboxRow[]): void {
    this.#handOff(effects);
  }

  async #sendInTransaction(
    tx: Queryable,
    environmentId: string,
    event: TEvent,
    context: CommitContext,
  ): Promise<SendOutcome | { quarantined: string }> {
    await lockEnvironment(tx, environmentId);
    const row = await readEnvironment(tx, environmentId);
    if (row === null) throw new EnvironmentNotFoundError(environmentId);
    if (row.quarantinedAt !== null)
      throw new SnapshotQuarantinedError(environmentId, row.quarantineReason ?? '');

    const fences = this.#definition.fences(event);
    if (fences.lifecycleGeneration !== undefined && fences.lifecycleGeneration !== row.lifecycleGeneration) {
      throw new StaleFenceError('lifecycleGeneration', fences.lifecycleGeneration, row.lifecycleGeneration);
    }

    const restored = restoreSnapshot(this.#definition, row.snapshot, row.machineVersion);
    if (!restored.ok) {
      // Committed on purpose: the quarantine mark must survive the error we raise next.
      await quarantineEnvironment(tx, environmentId, restored.reason);
      return { quarantined: restored.reason };
    }
    const [next, actions] = transition(this.#definition.machine, restored.snapshot, event);
    if (next === restored.snapshot) return { accepted: false, row, snapshot: restored.snapshot };

    const projection = this.#definition.project(next);
    const updated = await updateEnvironmentSnapshot(tx, {
      environmentId,
      expectedRevision: row.revision,
      machineVersion: this.#definition.version,
      snapshot: this.#definition.machine.getPersistedSnapshot(next),
      ...projection,
    });
    if (updated === null) throw new RevisionConflictError(environmentId, row.revision);
    await appendJournal(tx, {
      environmentId,
      revision: updated.revision,
      eventType: event.type,
      event,
      fromState: restored.snapshot.value,
      toState: next.value,
      actor: context.actor,
    });
    const effects = await this.#writeEffects(tx, updated, actions, event);
    await context.beforeCommit?.(tx, updated);
    return { accepted: true, row: updated, snapshot: next, effects };
  }

  /** Named actions `effect.<kind>` become outbox rows; xstate's own actions are not effects. */
  async #writeEffects(
    tx: Queryable,
    row: EnvironmentRow,
    actions: readonly { type: string; params?: unknown }[],
    event: TEvent | InitEvent,
  ): Promise<OutboxRow[]> {
    const effects: OutboxRow[] = [];
    for (const action of actions) {
      const declared = action.type.startsWith('effect.') || action.type.startsWith('record.');
      if (!declared) continue;
      await this.#definition.applyAction?.(
        tx,
        row,
        { type: action.type, params: action.params ?? null },
        event,
      );
      if (!action.type.startsWith('effect.')) continue;
      effects.push(
        await appendOutbox(tx, {
          environmentId: row.environmentId,
          revision: row.revision,
          kind: action.type.slice('effect.'.length),
          payload: action.params ?? null,
          attemptId: attemptIdOf(action.params),
        }),
      );
    }
    return effects;
  }

  #handOff(effects: OutboxRow[]): void {
    if (effects.length > 0) this.#onEffects(effects);
  }
}

function attemptIdOf(params: unknown): string | null {
  if (typeof params !== 'object' || params === null || !('attemptId' in params)) return null;
  const { attemptId } = params;
  return typeof attemptId === 'string' ? attemptId : null;
}
