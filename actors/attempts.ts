// The runner's side of the actor protocol for provider attempts: begin, complete and expire are
// steps through the runtime's one entry point (lock, reads and writes, transition, CAS, journal,
// outbox, hand-off, quarantine), never transactions of their own.
//   begin:    Pending → Dispatched only while the lease is current with the attempt's fences and in
//             the state that declared it; otherwise Superseded without calling the provider.
//   complete: the exact result is recorded and delivered to the machine in one commit.
//   expire:   a Dispatched attempt past its deadline becomes Unknown (the reconciler's move).
import type { EnvironmentEvent, ResourceSummary } from '../machines/environment-events.ts';
import type { EffectKind } from '../machines/environment-effects.ts';
import {
  markDispatched,
  readAttempt,
  readAttemptEnvironment,
  resolveAttempt,
  type AttemptRow,
} from '../store/attempts.ts';
import type { Queryable } from '../store/db.ts';
import { readCurrentLease, type LeaseRow } from '../store/leases.ts';
import { acknowledgeAttemptOutbox } from '../store/outbox-relay-queries.ts';
import type { ActorRuntime } from './runtime.ts';

/** The lease state an attempt kind may run in: the state is the gate. */
const gateState: Record<EffectKind, string> = {
  provision: 'Provisioning',
  release: 'Releasing',
  listOwned: 'ReconciliationRequired',
  describe: 'Active',
};

export type BeginResult =
  | { dispatch: true; attempt: AttemptRow; lease: LeaseRow; deadline: Date }
  | { dispatch: false; reason: 'missing' | 'not-pending' | 'superseded' };

/** What an exact describe saw: the resource's phase, or that the provider answered it is absent. */
export type Observation =
  | { present: true; phase: 'pending' | 'scheduled' | 'image-ready' | 'started'; finished: Finished | null }
  | { present: false };
type Finished = 'PodSucceeded' | 'PodFailed';

export type AttemptOutcome =
  | {
      state: 'Succeeded';
      resource?: ResourceSummary;
      receipt?: Record<string, unknown>;
      resources?: ResourceSummary[];
      observation?: Observation;
    }
  | { state: 'Failed' | 'Unknown'; error: { code: string; message: string } };

export interface AttemptDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
  /** Who is acting, for the journal (`worker:<host>:<pid>`). */
  actor: string;
}

const fencesOf = (a: AttemptRow, kind: 'provision' | 'release' | 'listOwned') => ({
  attemptId: a.attemptId,
  kind,
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

/** Runs `body` as a runtime step on the attempt's Environment, with the attempt read under its lock. */
async function onAttempt<T>(
  deps: AttemptDeps,
  attemptId: string,
  missing: T,
  body: (tx: Queryable, attempt: AttemptRow) => Promise<{ event: EnvironmentEvent | null; value: T }>,
): Promise<T> {
  // The Environment of an attempt never changes, so it may be read before the lock.
  const environmentId = await readAttemptEnvironment(deps.db, attemptId);
  if (environmentId === null) return missing;
  const { value } = await deps.runtime.step(
    environmentId,
    async (tx) => {
      const attempt = await readAttempt(tx, attemptId);
      return attempt === null ? { event: null, value: missing } : body(tx, attempt);
    },
    { actor: deps.actor },
  );
  return value;
}

export function beginAttempt(
  deps: AttemptDeps,
  attemptId: string,
  callTimeoutMs: number,
): Promise<BeginResult> {
  return onAttempt<BeginResult>(
    deps,
    attemptId,
    { dispatch: false, reason: 'missing' },
    async (tx, attempt) => {
      await acknowledgeAttemptOutbox(tx, attemptId);
      // Re-delivery of a dispatched or resolved attempt is a no-op; the reconciler owns overdue ones.
      if (attempt.state !== 'Pending')
        return { event: null, value: { dispatch: false, reason: 'not-pending' } };
      const lease = await readCurrentLease(tx, attempt.environmentId);
      if (!stillCurrent(attempt, lease)) {
        await resolveAttempt(tx, attemptId, {
          state: 'Superseded',
          resolution: 'lease moved on before dispatch',
        });
        const value = { dispatch: false, reason: 'superseded' } as const;
        // A describe blocks nothing, so the machine has nothing to settle.
        if (attempt.kind === 'describe') return { event: null, value };
        return { event: { type: 'provider.superseded', ...fencesOf(attempt, attempt.kind) }, value };
      }
      const deadline = new Date(Date.now() + callTimeoutMs);
      await markDispatched(tx, attemptId, deadline);
      return { event: null, value: { dispatch: true, attempt, lease, deadline } };
    },
  );
}

/** Records the exact outcome and delivers it to the machine in the same transaction. */
export function completeAttempt(
  deps: AttemptDeps,
  attemptId: string,
  outcome: AttemptOutcome,
): Promise<boolean> {
  return onAttempt(deps, attemptId, false, async (tx, attempt) => {
    // Already settled (for instance by reconciliation): a late duplicate changes nothing.
    if (attempt.state !== 'Dispatched' && attempt.state !== 'Unknown') return { event: null, value: false };
    if (outcome.state === 'Succeeded') {
      await resolveAttempt(tx, attemptId, {
        state: 'Succeeded',
        receipt: outcome.receipt ?? outcome.resource ?? outcome.resources ?? outcome.observation ?? null,
      });
    } else {
      await resolveAttempt(tx, attemptId, { state: outcome.state, error: outcome.error });
    }
    if (attempt.kind === 'describe') {
      const lease = await readCurrentLease(tx, attempt.environmentId);
      return { event: observedEvent(attempt, lease, outcome), value: true };
    }
    const event: EnvironmentEvent =
      outcome.state === 'Succeeded'
        ? {
            type: 'provider.succeeded',
            ...fencesOf(attempt, attempt.kind),
            resource: outcome.resource ?? null,
            receipt: outcome.receipt ?? null,
            resources: outcome.resources ?? null,
          }
        : {
            type: outcome.state === 'Failed' ? 'provider.failed' : 'provider.unknown',
            ...fencesOf(attempt, attempt.kind),
            error: outcome.error,
          };
    return { event, value: true };
  });
}

/**
 * A describe tells the machine only what changed: a new phase, or a finished run (which retires
 * placement). An absent resource or a failed describe proves nothing here and sends nothing.
 */
function observedEvent(attempt: AttemptRow, lease: LeaseRow | null, outcome: AttemptOutcome) {
  if (outcome.state !== 'Succeeded' || outcome.observation?.present !== true) return null;
  const { phase, finished } = outcome.observation;
  if (phase === lease?.resource?.phase && finished === null) return null;
  const event: EnvironmentEvent = {
    type: 'sandbox.observed',
    resourceGeneration: attempt.resourceGeneration,
    providerFence: attempt.providerFence,
    phase,
    finished,
  };
  return event;
}

/** The reconciler's move for an attempt stuck in Dispatched past its deadline. */
export function expireAttempt(deps: AttemptDeps, attemptId: string, now: Date): Promise<boolean> {
  return onAttempt(deps, attemptId, false, async (tx, attempt) => {
    if (attempt.state !== 'Dispatched' || attempt.deadlineAt === null || new Date(attempt.deadlineAt) >= now)
      return { event: null, value: false };
    const error = {
      code: 'deadline-passed',
      message: 'no result before the attempt deadline; outcome unknown',
    };
    await resolveAttempt(tx, attemptId, { state: 'Unknown', error });
    if (attempt.kind === 'describe') return { event: null, value: true };
    return { event: { type: 'provider.unknown', ...fencesOf(attempt, attempt.kind), error }, value: true };
  });
}
