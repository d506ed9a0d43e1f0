// Guards of the Environment machine as plain functions of (context, event), so they are testable
// on their own and the machine definition reads as a table of transitions.
import type { AttemptKind, EnvironmentEvent } from './environment-events.ts';
import { otherUnresolved, type EnvironmentContext } from './environment-context.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };
type ResultEvent = Extract<EnvironmentEvent, { type: `provider.${string}` }>;

const isResult = (event: EnvironmentEvent): event is ResultEvent => event.type.startsWith('provider.');

export function releaseAllowed({ context, event }: Args): boolean {
  return (
    event.type === 'environment.release' &&
    event.expectedLifecycleGeneration === context.lifecycleGeneration &&
    Object.keys(context.sandbox.unresolved).length === 0 &&
    context.sandbox.lease?.reconcileAttemptId == null &&
    Object.keys(context.cleanups).length === 0
  );
}

/** The expected generation is the current one, and this key has not advanced it before. */
export const advanceAllowed = ({ context, event }: Args): boolean =>
  event.type === 'environment.advance' &&
  event.expectedLifecycleGeneration === context.lifecycleGeneration &&
  !(event.operationKey in context.advances);

export const noUnresolved = ({ context }: Args): boolean =>
  Object.keys(context.sandbox.unresolved).length === 0;

/** The event names the current lease exactly (resource generation and provider fence). */
export function leaseMatches({ context, event }: Args): boolean {
  const lease = context.sandbox.lease;
  if (lease === null || !('providerFence' in event) || !('resourceGeneration' in event)) return false;
  if (event.type === 'sandbox.reconcile' && event.operationId !== lease.operationId) return false;
  return event.resourceGeneration === lease.resourceGeneration && event.providerFence === lease.providerFence;
}

/** The result names an attempt we opened, with exactly the fences it was opened under. */
function knownAttempt(
  args: Args,
  kind: AttemptKind,
): args is { context: EnvironmentContext; event: ResultEvent } {
  const { context, event } = args;
  const lease = context.sandbox.lease;
  if (lease === null || !isResult(event) || event.kind !== kind || !leaseMatches({ context, event }))
    return false;
  if (kind === 'listOwned') return lease.reconcileAttemptId === event.attemptId;
  return context.sandbox.unresolved[event.attemptId]?.fencingGeneration === event.fencingGeneration;
}

/** A result for an attempt of this kind opened under the current fences. */
export function currentAttempt(args: Args, params: { kind: AttemptKind }): boolean {
  return (
    knownAttempt(args, params.kind) &&
    args.event.fencingGeneration === args.context.sandbox.lease?.currentFencingGeneration
  );
}

/** A result for an unresolved attempt opened before the lease was abandoned. */
export function staleAttempt(args: Args, params: { kind: AttemptKind }): boolean {
  return (
    knownAttempt(args, params.kind) &&
    args.event.fencingGeneration !== args.context.sandbox.lease?.currentFencingGeneration
  );
}

export function othersUnresolved({ context, event }: Args): boolean {
  return isResult(event) && otherUnresolved(context.sandbox, event.attemptId).length > 0;
}

/** Another attempt of the lease has not answered yet (an Unknown one already has, inexactly). */
export function othersAwaitResult({ context, event }: Args): boolean {
  return (
    isResult(event) &&
    otherUnresolved(context.sandbox, event.attemptId).some(
      (id) => context.sandbox.unresolved[id]?.state === 'Pending',
    )
  );
}

/**
 * What a current release's result proves about another unresolved attempt of the lease: an earlier
 * release is answered by this one's receipt (the same resource, released and confirmed absent); a
 * provision only when the release's exact lookup found its operation's resource (and released it),
 * or when the provider proves that call can no longer take effect (`settledCalls`). An empty lookup
 * alone proves nothing about a provision that may still land.
 */
export function evidencedBy(
  context: EnvironmentContext,
  event: EnvironmentEvent,
  attemptId: string,
): boolean {
  const attempt = context.sandbox.unresolved[attemptId];
  if (attempt === undefined || event.type !== 'provider.succeeded') return false;
  if (attempt.kind === 'release') return true;
  return foundOwnResource({ context, event }) || (event.settledCalls ?? []).includes(attemptId);
}

/** Another unresolved attempt of the lease that this result is no evidence about. */
export function othersUnevidenced({ context, event }: Args): boolean {
  return (
    isResult(event) &&
    otherUnresolved(context.sandbox, event.attemptId).some((id) => !evidencedBy(context, event, id))
  );
}

export const releaseConfirmed = ({ context }: Args): boolean =>
  context.sandbox.lease?.releaseConfirmed === true;

export const recovering = ({ context }: Args, params: { what: 'provision' | 'release' }): boolean =>
  context.sandbox.lease?.recovering === params.what;

/** listOwned found the lease's own operation among the exactly-owned resources. */
export function foundOwnResource({ context, event }: Args): boolean {
  const lease = context.sandbox.lease;
  return (
    lease !== null &&
    event.type === 'provider.succeeded' &&
    (event.resources ?? []).some((r) => r.operationId === lease.operationId)
  );
}

export function observedFinished(args: Args): boolean {
  return args.event.type === 'sandbox.observed' && args.event.finished !== null && leaseMatches(args);
}

export const reconcileIdle = ({ context }: Args): boolean =>
  context.sandbox.lease?.reconcileAttemptId == null;

/** The result was committed after the provisioning subject's authority or the run selection lapsed. */
export const authorityLapsed = ({ event }: Args): boolean =>
  (event.type === 'provider.succeeded' || event.type === 'sandbox.observed') &&
  event.authorityLapse !== undefined;

/** The lease is parked for a lapsed authority: only a caller with current authority releases it. */
export const parked = ({ context }: Args): boolean => context.sandbox.lease?.authorityLapse != null;

/** The lease's expiry has passed by the event's clock, and was not fenced yet. */
export function expiryDue({ context, event }: Args): boolean {
  const lease = context.sandbox.lease;
  if (event.type !== 'sandbox.expire' || lease?.expiresAt == null || lease.expired) return false;
  // Both are fixed-width UTC instants, so string order is time order.
  return event.at >= lease.expiresAt;
}

/**
 * A renewal may start: the lease expires, has not expired (by the event's clock, nor fenced), no
 * renewal is in flight, the key is new, and the new expiry is later than the current one.
 */
export function renewAllowed({ context, event }: Args): boolean {
  const lease = context.sandbox.lease;
  if (event.type !== 'sandbox.renew' || lease?.expiresAt == null || lease.expired) return false;
  // The same key names the same renewal: a repeat is answered from it, never renewed again.
  if (lease.renewal?.state === 'Pending' || lease.renewal?.idempotencyKey === event.idempotencyKey)
    return false;
  return event.at < lease.expiresAt && event.expiresAt > lease.expiresAt;
}

/** The answer belongs to the renewal in flight (an older attempt's answer changes nothing). */
export function renewalAnswered({ context, event }: Args): boolean {
  const renewal = context.sandbox.lease?.renewal;
  return (
    event.type === 'sandbox.renewed' && renewal?.state === 'Pending' && renewal.attemptId === event.attemptId
  );
}
