// The cleanup region's guards, context updates and row records as plain functions of (context,
// event): late resources are recorded once, claimed one at a time with an expiring claim, and
// released under the owner fence that authorized the claim.
import type { CleanupItem, EnvironmentContext } from './environment-context.ts';
import { ownerFenceOf } from './environment-context.ts';
import type {
  CleanupClaimRecord,
  CleanupFailedRecord,
  CleanupRecord,
  CleanupReleasedRecord,
} from './environment-effects.ts';
import type { EnvironmentEvent } from './environment-events.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };
type Cleanups = EnvironmentContext['cleanups'];

/** The attempt that releases an item under one claim: one per claim token. */
export const cleanupAttemptId = (cleanupId: string, claimToken: string) =>
  `${cleanupId}.cleanup.${claimToken}`;

const itemOf = ({ context, event }: Args): CleanupItem | undefined =>
  'cleanupId' in event ? context.cleanups[event.cleanupId] : undefined;

/** The event's late resources not open here yet (a released record is kept out by the actor). */
const newItems = ({ context, event }: Args) =>
  event.type === 'cleanup.recorded' ? event.items.filter((i) => !(i.cleanupId in context.cleanups)) : [];

export const noOpenCleanup = ({ context }: Args): boolean => Object.keys(context.cleanups).length === 0;

/** At least one resource not recorded yet (the actor reads the table for released ones). */
export const newCleanup = (args: Args): boolean => newItems(args).length > 0;

/** A sweep names a lease that is not the current one (or the current one is terminal). */
export const otherLease = ({ context, event }: Args): boolean =>
  event.type === 'cleanup.sweep' && context.sandbox.lease?.operationId !== event.operationId;

/** Pending, or claimed by a claim that has expired by the claimant's clock. */
export function claimable(args: Args): boolean {
  const item = itemOf(args);
  const { event } = args;
  if (item === undefined || event.type !== 'cleanup.claim') return false;
  if (item.state === 'Pending') return true;
  // Both are fixed-width UTC instants (instantSchema), so string order is time order.
  return item.claimExpiresAt !== null && event.at >= item.claimExpiresAt;
}

/** The result names the item's current claim and its attempt. */
export function claimCurrent(args: Args): boolean {
  const item = itemOf(args);
  const { event } = args;
  if (item === undefined || (event.type !== 'cleanup.released' && event.type !== 'cleanup.failed'))
    return false;
  return (
    item.state === 'Claimed' && item.claimToken === event.claimToken && item.attemptId === event.attemptId
  );
}

/** The owner fence that authorized the claim is still the Environment's current one. */
export function fenceCurrent(args: Args): boolean {
  const fence = itemOf(args)?.authorizingFence;
  const now = ownerFenceOf(args.context);
  return (
    fence != null &&
    fence.lifecycleGeneration === now.lifecycleGeneration &&
    fence.providerFence === now.providerFence
  );
}

export function addCleanup(args: Args): Cleanups {
  const added = newItems(args).map((i): [string, CleanupItem] => [
    i.cleanupId,
    {
      state: 'Pending',
      resourceId: i.resource.resourceId,
      source: i.source,
      claimToken: null,
      claimExpiresAt: null,
      attemptId: null,
      authorizingFence: null,
    },
  ]);
  return { ...args.context.cleanups, ...Object.fromEntries(added) };
}

export function claimCleanup(args: Args): Cleanups {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'cleanup.claim') return context.cleanups;
  const claimed: CleanupItem = {
    ...item,
    state: 'Claimed',
    claimToken: event.claimToken,
    claimExpiresAt: event.expiresAt,
    attemptId: cleanupAttemptId(event.cleanupId, event.claimToken),
    authorizingFence: ownerFenceOf(context),
  };
  return { ...context.cleanups, [event.cleanupId]: claimed };
}

/** Released: the record lives on in the table only. */
export function dropCleanup({ context, event }: Args): Cleanups {
  if (!('cleanupId' in event)) return context.cleanups;
  return Object.fromEntries(Object.entries(context.cleanups).filter(([id]) => id !== event.cleanupId));
}

/** The release failed or its outcome is unknown: available to the next claim at once. */
export function unclaimCleanup(args: Args): Cleanups {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || !('cleanupId' in event)) return context.cleanups;
  const released: CleanupItem = {
    ...item,
    state: 'Pending',
    claimToken: null,
    claimExpiresAt: null,
    attemptId: null,
    authorizingFence: null,
  };
  return { ...context.cleanups, [event.cleanupId]: released };
}

export function claimedItem(context: EnvironmentContext, event: EnvironmentEvent) {
  if (!('cleanupId' in event)) throw new Error('not a cleanup event');
  const item = context.cleanups[event.cleanupId];
  if (item === undefined) throw new Error(`no cleanup item ${event.cleanupId}`);
  return { cleanupId: event.cleanupId, item };
}

/** The source's volume is held for a late resource only when the lifecycle fences match. */
export function cleanupRecordsOf(context: EnvironmentContext, event: EnvironmentEvent): CleanupRecord[] {
  if (event.type !== 'cleanup.recorded') throw new Error('not cleanup.recorded');
  return newItems({ context, event }).map((i) => ({
    cleanupId: i.cleanupId,
    foundBy: event.foundBy,
    sourceAttemptId: event.sourceAttemptId,
    source: i.source,
    resource: i.resource,
    holdWorkspace: i.source.lifecycleGeneration === context.lifecycleGeneration,
  }));
}

export function claimRecordOf(context: EnvironmentContext, event: EnvironmentEvent): CleanupClaimRecord {
  const { cleanupId, item } = claimedItem(context, event);
  if (event.type !== 'cleanup.claim') throw new Error('not cleanup.claim');
  return {
    cleanupId,
    claimToken: event.claimToken,
    claimedAt: event.at,
    claimExpiresAt: event.expiresAt,
    attemptId: item.attemptId ?? cleanupAttemptId(cleanupId, event.claimToken),
    authorizingFence: item.authorizingFence ?? ownerFenceOf(context),
  };
}

/** For an older source lifecycle generation the current Workspace is neither read nor changed. */
export function releasedRecordOf(
  context: EnvironmentContext,
  event: EnvironmentEvent,
): CleanupReleasedRecord {
  const { cleanupId, item } = claimedItem(context, event);
  if (event.type !== 'cleanup.released') throw new Error('not cleanup.released');
  const sameLifecycle = item.source.lifecycleGeneration === context.lifecycleGeneration;
  return {
    cleanupId,
    receipt: event.receipt,
    detachWorkspace: sameLifecycle
      ? { volumeId: item.source.workspace.volumeId, lease: item.source.resourceGeneration }
      : null,
  };
}

export function failedRecordOf(event: EnvironmentEvent): CleanupFailedRecord {
  if (event.type !== 'cleanup.failed') throw new Error('not cleanup.failed');
  return { cleanupId: event.cleanupId, error: event.error };
}
