// The actor protocol: the only way an Environment's state changes. One transaction per event:
// advisory lock → fence check → pure transition → revision CAS → journal row → outbox rows → commit.
// On the wire that is BEGIN, lock-and-read, the derived rows' writes (if any), one commit statement
// (CAS + journal + outbox), COMMIT.
// Effects reach workers only through outbox rows written in that same transaction.
import { mark } from '../lib/timeline.ts';
import { activeTraceContext, inSpan } from '../lib/tracing.ts';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import type { Database, Queryable } from '../store/db.ts';
import {
  commitRevision,
  insertEnvironment,
  lockAndReadEnvironment,
  quarantineEnvironment,
  type EnvironmentRow,
  type NewEffect,
} from '../store/environments.ts';
import { appendJournal } from '../store/journal.ts';
import { appendOutbox, type OutboxRow } from '../store/outbox.ts';
import type { ActorDefinition, InitEvent, TransitionNote } from './definition.ts';
import {
  EnvironmentNotFoundError,
  RevisionConflictError,
  SnapshotQuarantinedError,
  StaleFenceError,
} from './errors.ts';
import { KeyedQueue } from './keyed-queue.ts';
import { restoreSnapshot } from './restore.ts';

/** Where an event came from: an API request, an attempt runner, the reconciler, the observer… */
export type EventSource = 'http' | 'worker' | 'reconciler' | 'observer' | 'provider' | 'system';

export interface CommitContext {
  /** Who caused the change (token subject, or `worker:<id>`); recorded in the journal. */
  actor: string;
  /** Where the event came from (default `system`); told to commit listeners. */
  source?: EventSource;
  /**
   * Runs inside the transaction after the new state is computed and before commit: authority and
   * selection rechecks. Throwing rolls everything back. Use only `tx` for database reads.
   */
  beforeCommit?: (tx: Queryable, row: EnvironmentRow) => Promise<void>;
  /**
   * The caller runs the attempts this commit opens itself, at once (an inspection's describe):
   * they are not handed to the queue after commit, so no worker locks the Environment for them in
   * vain. Their outbox rows stay unpublished, so if the caller dies first a relay tick publishes
   * them; nothing is lost.
   */
  runsEffectsHere?: boolean;
}

/**
 * The extra reads and writes an event needs inside its transaction (a worker recording a provider
 * result, moving an attempt to Dispatched). Runs after the lock and the row read, before the
 * transition; returns the event to send (null: none) and a value for the caller. Its writes commit
 * with the transition, or alone when there is no event, the machine ignores it, or the snapshot is
 * quarantined (an exact provider result is kept even then); they roll back if anything throws.
 */
export type Prepare<TEvent, T> = (
  tx: Queryable,
  row: EnvironmentRow,
) => Promise<{ event: TEvent | null; value: T }>;

export type SendOutcome =
  | {
      accepted: true;
      row: EnvironmentRow;
      snapshot: AnyMachineSnapshot;
      effects: OutboxRow[];
      /** The state value before the transition. */
      fromState: unknown;
      /** What the writer found (`ActorDefinition.applyActions`), for the commit listeners. */
      notes: readonly TransitionNote[];
    }
  /** The machine ignored the event in its current state; nothing was written. */
  | { accepted: false; row: EnvironmentRow; snapshot: AnyMachineSnapshot };

/** What a new actor's row is keyed and pinned by. */
export type Identity = Pick<
  EnvironmentRow,
  'environmentId' | 'tenantId' | 'projectId' | 'runId' | 'idempotencyKey' | 'runSelectionHash'
>;

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

/**
 * What a commit listener hears about one event, after its transaction ended: `committed` (a new
 * revision, with its snapshot), `ignored` (the machine did not take it; nothing written) or
 * `rejected` (it threw: a stale fence, a revision conflict, a quarantined snapshot, a failed check).
 */
export type CommitNotice = {
  environmentId: string;
  event: { type: string };
  source: EventSource;
  actor: string;
  /** Wall time of the whole transaction, lock wait included. */
  durationMs: number;
} & (
  | {
      outcome: 'committed';
      revision: number;
      fromState: unknown;
      toState: unknown;
      /** The persisted snapshot of the new revision. */
      snapshot: unknown;
      notes: readonly TransitionNote[];
    }
  | { outcome: 'ignored'; revision: number }
  | { outcome: 'rejected'; error: string }
);

export type CommitListener = (notice: CommitNotice) => void;

export interface StepOutcome<T> {
  value: T;
  /** The event's outcome; null when `prepare` sent no event. */
  sent: SendOutcome | null;
}

export class ActorRuntime<TEvent extends { type: string }> {
  readonly #db: Database;
  readonly #definition: ActorDefinition<TEvent>;
  #onEffects: (rows: OutboxRow[]) => void;
  readonly #queue = new KeyedQueue();
  readonly #listeners = new Set<CommitListener>();

  constructor(options: ActorRuntimeOptions<TEvent>) {
    this.#db = options.db;
    this.#definition = options.definition;
    this.#onEffects = options.onEffects ?? (() => undefined);
  }

  /** Where committed outbox rows go after commit (the queue hand-off); set once workers exist. */
  setEffectSink(sink: (rows: OutboxRow[]) => void): void {
    this.#onEffects = sink;
  }

  /**
   * Hears every event this runtime handled, after its transaction ended (inspection, metrics).
   * Listeners run synchronously and must be cheap; one that throws is ignored. Returns the removal.
   */
  onCommitted(listener: CommitListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(notice: CommitNotice): void {
    for (const listener of this.#listeners) {
      try {
        listener(notice);
      } catch {
        // A listener's failure is its own: the commit already happened.
      }
    }
  }

  /** Creates the actor at revision 1, or returns the existing row (idempotent on the ID). */
  create(identity: Identity, input: unknown, context: CommitContext): Promise<CreateOutcome> {
    return this.#queue.run(identity.environmentId, async () => {
      const started = performance.now();
      const outcome = await this.#db.transaction(async (tx) => {
        const existing = await lockAndReadEnvironment(tx, identity.environmentId);
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
          source: context.source ?? 'system',
        });
        const effects = await this.#writeEffects(tx, row, actions, { type: 'xstate.init' });
        await context.beforeCommit?.(tx, row);
        return { created: true, row, effects };
      });
      if (outcome.effects.length > 0) this.#onEffects(outcome.effects);
      if (outcome.created) {
        this.#notify({
          environmentId: outcome.row.environmentId,
          event: { type: 'xstate.init' },
          source: context.source ?? 'system',
          actor: context.actor,
          durationMs: performance.now() - started,
          outcome: 'committed',
          revision: outcome.row.revision,
          fromState: null,
          toState: (outcome.row.snapshot as { value?: unknown } | null)?.value ?? null,
          snapshot: outcome.row.snapshot,
          notes: [],
        });
      }
      return outcome;
    });
  }

  /** Sends one event: the whole protocol in one transaction, effects handed off after commit. */
  async send(environmentId: string, event: TEvent, context: CommitContext): Promise<SendOutcome> {
    const { sent } = await this.step(
      environmentId,
      () => Promise.resolve({ event, value: undefined }),
      context,
    );
    if (sent === null) throw new Error('unreachable: an event was given');
    return sent;
  }

  /**
   * The one entry point every state change goes through: lock, `prepare` (the step's own reads and
   * writes), fence check, pure transition, revision CAS, journal, derived rows and outbox, the
   * commit-time check, commit, hand-off, and quarantine of a snapshot that will not restore.
   */
  step<T>(
    environmentId: string,
    prepare: Prepare<TEvent, T>,
    context: CommitContext,
  ): Promise<StepOutcome<T>> {
    return this.#queue.run(environmentId, async () => {
      const started = performance.now();
      let handled: TEvent | null = null;
      const notice = { environmentId, source: context.source ?? 'system', actor: context.actor } as const;
      let result: { value: T; sent: SendOutcome | { quarantined: string } | null };
      try {
        result = await this.#db.transaction(async (tx) => {
          const row = await lockAndReadEnvironment(tx, environmentId);
          if (row === null) throw new EnvironmentNotFoundError(environmentId);
          mark(environmentId, 'tx: locked and read');
          const { event, value } = await prepare(tx, row);
          mark(environmentId, `tx: prepared ${event?.type ?? '-'}`);
          handled = event;
          if (event === null) {
            // What `prepare` wrote without an event (a detach, say) is held to the same checks.
            await context.beforeCommit?.(tx, row);
            return { value, sent: null };
          }
          const sent = await inSpan(
            `transition ${event.type}`,
            { attributes: { 'sandlot.environment_id': row.environmentId, 'sandlot.event': event.type } },
            () => this.#transition(tx, row, event, context),
          );
          return { value, sent };
        });
      } catch (error) {
        const event: TEvent | null = handled;
        if (event !== null) {
          const message = error instanceof Error ? error.message : String(error);
          this.#notify({
            ...notice,
            event,
            durationMs: performance.now() - started,
            outcome: 'rejected',
            error: message,
          });
        }
        throw error;
      }
      const event: TEvent | null = handled;
      const durationMs = performance.now() - started;
      // Committed on purpose (the quarantine mark and what `prepare` wrote must survive): now raise.
      if (result.sent !== null && 'quarantined' in result.sent) {
        if (event !== null) {
          this.#notify({ ...notice, event, durationMs, outcome: 'rejected', error: 'snapshot quarantined' });
        }
        throw new SnapshotQuarantinedError(environmentId, result.sent.quarantined);
      }
      const sent = result.sent;
      if (sent?.accepted === true && sent.effects.length > 0 && context.runsEffectsHere !== true)
        this.#onEffects(sent.effects);
      if (event !== null && sent !== null) {
        this.#notify(
          sent.accepted
            ? {
                ...notice,
                event,
                durationMs,
                outcome: 'committed',
                revision: sent.row.revision,
                fromState: sent.fromState,
                toState: sent.snapshot.value,
                snapshot: sent.row.snapshot,
                notes: sent.notes,
              }
            : { ...notice, event, durationMs, outcome: 'ignored', revision: sent.row.revision },
        );
      }
      return { value: result.value, sent };
    });
  }

  async #transition(
    tx: Queryable,
    row: EnvironmentRow,
    event: TEvent,
    context: CommitContext,
  ): Promise<SendOutcome | { quarantined: string }> {
    const { environmentId } = row;
    if (row.quarantinedAt !== null) return { quarantined: row.quarantineReason ?? '' };

    const fences = this.#definition.fences(event);
    if (fences.lifecycleGeneration !== undefined && fences.lifecycleGeneration !== row.lifecycleGeneration) {
      throw new StaleFenceError('lifecycleGeneration', fences.lifecycleGeneration, row.lifecycleGeneration);
    }

    const restored = restoreSnapshot(this.#definition, row.snapshot, row.machineVersion);
    if (!restored.ok) {
      await quarantineEnvironment(tx, environmentId, restored.reason);
      return { quarantined: restored.reason };
    }
    const [next, actions] = transition(this.#definition.machine, restored.snapshot, event);
    mark(environmentId, 'tx: restored and transitioned');
    if (next === restored.snapshot) return { accepted: false, row, snapshot: restored.snapshot };

    const projection = this.#definition.project(next);
    const snapshot = this.#definition.machine.getPersistedSnapshot(next);
    const revision = row.revision + 1;
    // The derived rows go first, written for the revision the CAS below will produce: if it fails,
    // the transaction rolls back with them.
    const { effects: planned, notes } = await this.#applyActions(
      tx,
      { ...row, ...projection, snapshot, machineVersion: this.#definition.version, revision },
      actions,
      event,
    );
    mark(environmentId, 'tx: derived rows written');
    const committed = await commitRevision(
      tx,
      {
        environmentId,
        expectedRevision: row.revision,
        machineVersion: this.#definition.version,
        snapshot,
        ...projection,
      },
      {
        eventType: event.type,
        event,
        fromState: restored.snapshot.value,
        toState: next.value,
        actor: context.actor,
        source: context.source ?? 'system',
      },
      planned,
    );
    if (committed === null) throw new RevisionConflictError(environmentId, row.revision);
    mark(environmentId, 'tx: revision, journal and outbox written');
    await context.beforeCommit?.(tx, committed.row);
    mark(environmentId, 'tx: commit checks done');
    return {
      accepted: true,
      row: committed.row,
      snapshot: next,
      effects: committed.effects,
      fromState: restored.snapshot.value,
      notes,
    };
  }

  /**
   * Declared actions: `record.*` and `effect.*` go to the definition as one batch (so a row touched
   * twice in one transition is written once); returns the outbox rows the `effect.*` ones become.
   */
  async #applyActions(
    tx: Queryable,
    row: EnvironmentRow,
    actions: readonly { type: string; params?: unknown }[],
    event: TEvent | InitEvent,
  ): Promise<{ effects: NewEffect[]; notes: readonly TransitionNote[] }> {
    const declared = actions
      .filter((a) => a.type.startsWith('effect.') || a.type.startsWith('record.'))
      .map((a) => ({ type: a.type, params: a.params ?? null }));
    if (declared.length === 0) return { effects: [], notes: [] };
    const notes = (await this.#definition.applyActions?.(tx, row, declared, event)) ?? [];
    // Stored with each row, so the worker that runs the effect continues this trace.
    const traceContext = activeTraceContext();
    const effects = declared
      .filter((action) => action.type.startsWith('effect.'))
      .map((action) => ({
        kind: action.type.slice('effect.'.length),
        payload: action.params,
        attemptId: attemptIdOf(action.params),
        traceContext,
      }));
    return { effects, notes };
  }

  /** The initial transition's declared actions and outbox rows (create: a statement each). */
  async #writeEffects(
    tx: Queryable,
    row: EnvironmentRow,
    actions: readonly { type: string; params?: unknown }[],
    event: TEvent | InitEvent,
  ): Promise<OutboxRow[]> {
    const effects: OutboxRow[] = [];
    // The initial transition records no late resource, so it has no notes to report.
    for (const effect of (await this.#applyActions(tx, row, actions, event)).effects) {
      effects.push(
        await appendOutbox(tx, { environmentId: row.environmentId, revision: row.revision, ...effect }),
      );
    }
    return effects;
  }
}

function attemptIdOf(params: unknown): string | null {
  if (typeof params !== 'object' || params === null || !('attemptId' in params)) return null;
  const { attemptId } = params;
  return typeof attemptId === 'string' ? attemptId : null;
}
