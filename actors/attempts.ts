// The worker's side of the actor protocol for provider attempts. Two short transactions around the
// provider call, both under the Environment's advisory lock:
//   begin: Pending → Dispatched only while the lease is current with the attempt's fences and in
//          the state that declared it; otherwise Superseded without calling the provider.
//   complete: the exact result is recorded and delivered to the machine in one commit.
import type { EnvironmentEvent, ResourceSummary } from '../machines/environment-events.ts';
import { acknowledgeAttemptOutbox as acknowledgeAttempt } from '../store/outbox-relay-queries.ts';
import { markDispatched, readAttempt, resolveAttempt, type AttemptRow } from '../store/attempts.ts';
import type { Database, Queryable } from '../store/db.ts';
import { lockEnvironment, quarantineEnvironment } from '../store/environments.ts';
import { readCurrentLease, type LeaseRow } from '../store/leases.ts';
import type { OutboxRow } from '../store/outbox.ts';
import { SnapshotQuarantinedError } from './errors.ts';
import type { ActorRuntime } from './runtime.ts';

/** The lease state an attempt kind may run in: the state is the gate. */
const gateState: Record<string, string> = {
  provision: 'Provisioning',
  release: 'Releasing',
  listOwned: 'ReconciliationRequired',
};

export type BeginResult =
  | { dispatch: true; attempt: AttemptRow; lease: LeaseRow; deadline: Date }
  | { dispatch: false; reason: 'missing' | 'not-pending' | 'superseded' };

export type AttemptOutcome =
  | {
      state: 'Succeeded';
      resource?: ResourceSummary;
      receipt?: Record<string, unknown>;
      resources?: ResourceSummary[];
    }
  | { state: 'Failed' | 'Unknown'; error: { code: string; message: string } };

export interface AttemptDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  /** Who is acting, for the journal (`worker:<host>:<pid>`). */
  actor: string;
}

const fencesOf = (a: AttemptRow) => ({
  attemptId: a.attemptId,
  kind: a.kind as 'provision' | 'release' | 'listOwned',
  resourceGeneration: a.resourceGeneration,
  providerFence: a.providerFence,
  fencingGeneration: a.fencingGeneration,
});

function stillCurrent(attempt: AttemptRow, lease: LeaseRow | null): lease is LeaseRow {
  return (
    lease !== null &&
    lease.resourceGeneration === attempt.resourceGeneration &&
    lease.providerFence === attempt.providerFence &&
    lease.currentFencingGeneration === attempt.fencingGeneration &&
    lease.state === gateState[attempt.kind]
  );
}

async function lockedAttempt(tx: Queryable, attemptId: string): Promise<AttemptRow | null> {
  const first = await readAttempt(tx, attemptId);
  if (first === null) return null;
  await lockEnvironment(tx, first.environmentId);
  return readAttempt(tx, attemptId);
}

export async function beginAttempt(
  deps: AttemptDeps,
  attemptId: string,
  callTimeoutMs: number,
): Promise<BeginResult> {
  let effects: OutboxRow[] = [];
  const result = await deps.db.transaction(async (tx): Promise<BeginResult> => {
    const attempt = await lockedAttempt(tx, attemptId);
    if (attempt === null) return { dispatch: false, reason: 'missing' };
    // Re-delivery of a dispatched or resolved attempt is a no-op; the reconciler owns overdue ones.
    if (attempt.state !== 'Pending') {
      await acknowledgeAttempt(tx, attemptId);
      return { dispatch: false, reason: 'not-pending' };
    }
    await acknowledgeAttempt(tx, attemptId);
    const lease = await readCurrentLease(tx, attempt.environmentId);
    if (!stillCurrent(attempt, lease)) {
      await resolveAttempt(tx, attemptId, {
        state: 'Superseded',
        resolution: 'lease moved on before dispatch',
      });
      const outcome = await deps.runtime.sendWithin(
        tx,
        attempt.environmentId,
        { type: 'provider.superseded', ...fencesOf(attempt) },
        { actor: deps.actor },
      );
      if (outcome.accepted) effects = outcome.effects;
      return { dispatch: false, reason: 'superseded' };
    }
    const deadline = new Date(Date.now() + callTimeoutMs);
    await markDispatched(tx, attemptId, deadline);
    return { dispatch: true, attempt, lease, deadline };
  });
  deps.runtime.handOff(effects);
  return result;
}

/** Records the exact outcome and delivers it to the machine in the same transaction. */
export async function completeAttempt(
  deps: AttemptDeps,
  attemptId: string,
  outcome: AttemptOutcome,
): Promise<boolean> {
  let effects: OutboxRow[] = [];
  const record = (tx: Queryable) =>
    outcome.state === 'Succeeded'
      ? resolveAttempt(tx, attemptId, {
          state: 'Succeeded',
          receipt: outcome.receipt ?? outcome.resource ?? outcome.resources ?? null,
        })
      : resolveAttempt(tx, attemptId, { state: outcome.state, error: outcome.error });
  const deliver = async (tx: Queryable) => {
    const attempt = await lockedAttempt(tx, attemptId);
    // Already settled (for instance by reconciliation): a late duplicate changes nothing.
    if (attempt === null || (attempt.state !== 'Dispatched' && attempt.state !== 'Unknown')) return false;
    await record(tx);
    const event: EnvironmentEvent =
      outcome.state === 'Succeeded'
        ? {
            type: 'provider.succeeded',
            ...fencesOf(attempt),
            resource: outcome.resource ?? null,
            receipt: outcome.receipt ?? null,
            resources: outcome.resources ?? null,
          }
        : {
            type: outcome.state === 'Failed' ? 'provider.failed' : 'provider.unknown',
            ...fencesOf(attempt),
            error: outcome.error,
          };
    const sent = await deps.runtime.sendWithin(tx, attempt.environmentId, event, { actor: deps.actor });
    if (sent.accepted) effects = sent.effects;
    return true;
  };
  let delivered: boolean;
  try {
    delivered = await deps.db.transaction(deliver);
  } catch (error) {
    if (!(error instanceof SnapshotQuarantinedError)) throw error;
    // The Environment cannot take the event, but the exact result must still be kept, and the
    // quarantine mark must survive (the failed transaction rolled both back).
    await deps.db.transaction(async (tx) => {
      const attempt = await lockedAttempt(tx, attemptId);
      if (attempt?.state === 'Dispatched' || attempt?.state === 'Unknown') await record(tx);
      await quarantineEnvironment(tx, error.environmentId, error.reason);
    });
    throw error;
  }
  deps.runtime.handOff(effects);
  return delivered;
}

/** The reconciler's move for an attempt stuck in Dispatched past its deadline. */
export async function expireAttempt(deps: AttemptDeps, attemptId: string, now: Date): Promise<boolean> {
  let effects: OutboxRow[] = [];
  const expired = await deps.db.transaction(async (tx) => {
    const attempt = await lockedAttempt(tx, attemptId);
    if (attempt?.state !== 'Dispatched' || attempt.deadlineAt === null || new Date(attempt.deadlineAt) >= now)
      return false;
    const error = {
      code: 'deadline-passed',
      message: 'no result before the attempt deadline; outcome unknown',
    };
    await resolveAttempt(tx, attemptId, { state: 'Unknown', error });
    const sent = await deps.runtime.sendWithin(
      tx,
      attempt.environmentId,
      { type: 'provider.unknown', ...fencesOf(attempt), error },
      { actor: deps.actor },
    );
    if (sent.accepted) effects = sent.effects;
    return true;
  });
  deps.runtime.handOff(effects);
  return expired;
}
