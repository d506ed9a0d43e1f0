// A fresh exact observation of an Active lease, through the one attempt runner: the machine opens a
// describe attempt (`sandbox.describe`, written Pending under the Environment lock like every
// provider call, gated by the lease state and fences), the runner runs it now, and its completion
// tells the machine what changed (a new phase, or a finished run, which retires placement).
// Inspection awaits it with a bounded wait; the periodic observer uses it for every Active lease.
import { z } from 'zod';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { readOpenDescribe, type AttemptRow } from '../../store/attempts.ts';
import type { LeaseRow } from '../../store/leases.ts';
import type { AttemptRunner } from '../ports.ts';
import type { ActorRuntime, CommitContext } from '../runtime.ts';

export interface Observation {
  exact: boolean;
  phase: string | null;
  finished: string | null;
  /** The Pod that answered, where the provider has Pods. */
  podUid?: string;
  error: { code: string; message: string } | null;
}

export interface ObserveDeps {
  runtime: ActorRuntime<EnvironmentEvent>;
  runner: AttemptRunner;
  /** How long a caller waits for the describe's result. */
  describeTimeoutMs: number;
}

/** The receipt a describe attempt records (workers/effect-processor.ts). */
const describeReceipt = z.discriminatedUnion('present', [
  z.object({
    present: z.literal(true),
    phase: z.string(),
    finished: z.string().nullable(),
    podUid: z.string().optional(),
    /** The provider's placement of that Pod (the machine records it: actors/attempts.ts). */
    placement: z.record(z.string(), z.string()).optional(),
  }),
  z.object({ present: z.literal(false) }),
]);

const pendingObservation = (timeoutMs: number): Observation => ({
  exact: false,
  phase: null,
  finished: null,
  error: { code: 'observation-pending', message: `no describe result within ${timeoutMs} ms` },
});

function observationOf(attempt: AttemptRow | null, timeoutMs: number): Observation {
  const none = { exact: false, phase: null, finished: null };
  if (attempt === null)
    return { ...none, error: { code: 'attempt-missing', message: 'the describe attempt is gone' } };
  switch (attempt.state) {
    case 'Succeeded': {
      const receipt = describeReceipt.parse(attempt.receipt);
      if (!receipt.present) return { ...none, error: null };
      const observed = { exact: true, phase: receipt.phase, finished: receipt.finished, error: null };
      return receipt.podUid === undefined ? observed : { ...observed, podUid: receipt.podUid };
    }
    case 'Pending':
    case 'Dispatched':
      return pendingObservation(timeoutMs);
    case 'Superseded':
      return {
        ...none,
        error: { code: 'superseded', message: 'the lease moved on before the describe ran' },
      };
    default:
      return { ...none, error: attempt.error ?? { code: 'provider-error', message: attempt.state } };
  }
}

/**
 * Describes the lease exactly, now. Null when the lease is not Active (nothing to observe); an
 * observation with `exact: false` when the machine refused the describe or the answer was not exact.
 *
 * At most one describe of a lease is in flight at a time. Under the Environment's lock a caller
 * shares a describe that is not dispatched yet (it will be, after this request arrived, so its
 * answer is fresh for it too), or one dispatched after it arrived; one dispatched before it arrived
 * is waited for first, not raced, and only then is a fresh one opened. Concurrent inspections of
 * one lease thus cost one or two describes, not one each, and a provider that is not answering is
 * asked once per lease per call deadline, however many callers wait.
 */
export async function observeLease(
  deps: ObserveDeps,
  lease: LeaseRow,
  context: CommitContext,
): Promise<Observation | null> {
  if (lease.state !== 'Active') return null;
  const until = Date.now() + deps.describeTimeoutMs;
  const fences = {
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    fencingGeneration: lease.currentFencingGeneration,
  };
  let since: Date | null = null;
  for (let waited = false; ; waited = true) {
    const { value: found, sent } = await deps.runtime.step<{ share: string | null; wait: string | null }>(
      lease.environmentId,
      async (tx) => {
        const read = await readOpenDescribe(tx, fences, since);
        since = read.since;
        const { open } = read;
        if (open !== null && (open.state === 'Pending' || open.fresh))
          return { event: null, value: { share: open.attemptId, wait: null } };
        if (open !== null && !waited) return { event: null, value: { share: null, wait: open.attemptId } };
        const event: EnvironmentEvent = {
          type: 'sandbox.describe',
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
        };
        return { event, value: { share: null, wait: null } };
      },
      // The describe it opens is run below, here: the queue need not carry it too.
      { ...context, runsEffectsHere: true },
    );
    const remaining = Math.max(0, until - Date.now());
    if (found.wait !== null) {
      const row = await deps.runner.runNow(found.wait, remaining);
      const ended = row !== null && row.state !== 'Pending' && row.state !== 'Dispatched';
      if (!ended) return observationOf(row, deps.describeTimeoutMs);
      if (until <= Date.now()) return pendingObservation(deps.describeTimeoutMs);
      continue;
    }
    const opened =
      sent?.accepted === true ? sent.effects.find((e) => e.kind === 'provider')?.attemptId : null;
    const attemptId = found.share ?? opened ?? null;
    if (attemptId === null) {
      return {
        exact: false,
        phase: null,
        finished: null,
        error: { code: 'lease-moved-on', message: 'the lease is no longer Active with these fences' },
      };
    }
    return observationOf(await deps.runner.runNow(attemptId, remaining), deps.describeTimeoutMs);
  }
}
