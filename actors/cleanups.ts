// Late-resource cleanup, the actor side: claiming one item (the reconciler, or the reconcile route
// for its own Environment) is a machine event whose transition writes the claim and the release
// attempt; the attempt then runs through the one attempt runner like every provider call. The view
// is what callers see: exact attempt, claim and receipt state, never the owner binding or options.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { cleanupAttemptId } from '../machines/environment-cleanup.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { AttemptRow } from '../store/attempts.ts';
import { claimableCleanups, type CleanupRow } from '../store/cleanups.ts';
import type { Queryable } from '../store/db.ts';
import type { ActorRuntime, CommitContext } from './runtime.ts';

/** How long a claim lasts: long enough to be queued, dispatched and answered under one claim. */
export const claimTtlMs = (callTimeoutMs = 30_000) => 2 * callTimeoutMs + 5_000;

export interface ClaimDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
}

/**
 * Claims one cleanup item until `now + ttlMs` with a fresh token; the attempt ID of its release, or
 * null when the machine refused (claimed by someone else and not expired, or released already).
 */
export async function claimCleanup(
  deps: ClaimDeps,
  item: { environmentId: string; cleanupId: string },
  now: Date,
  ttlMs: number,
  context: CommitContext,
): Promise<string | null> {
  const claimToken = randomUUID();
  const outcome = await deps.runtime.send(
    item.environmentId,
    {
      type: 'cleanup.claim',
      cleanupId: item.cleanupId,
      claimToken,
      at: now.toISOString(),
      expiresAt: new Date(now.getTime() + ttlMs).toISOString(),
    },
    context,
  );
  return outcome.accepted ? cleanupAttemptId(item.cleanupId, claimToken) : null;
}

/** The first item of this Environment a reconciler may claim now, if any. */
export async function nextClaimable(
  q: Queryable,
  environmentId: string,
  now: Date,
): Promise<{ environmentId: string; cleanupId: string } | null> {
  return (await claimableCleanups(q, now, 1, environmentId))[0] ?? null;
}

const fenceSchema = z.object({ lifecycleGeneration: z.number().int(), providerFence: z.number().int() });

export const cleanupViewSchema = z.object({
  cleanupId: z.string(),
  state: z.enum(['Pending', 'Claimed', 'Released']),
  foundBy: z.enum(['late-result', 'owner-listing']),
  resourceId: z.string(),
  phase: z.string(),
  source: z.object({
    operationId: z.string(),
    attemptId: z.string().nullable(),
    lifecycleGeneration: z.number().int(),
    resourceGeneration: z.number().int(),
    providerFence: z.number().int(),
  }),
  claim: z
    .object({
      attemptId: z.string().nullable(),
      claimedAt: z.string().nullable(),
      expiresAt: z.string().nullable(),
      authorizingFence: fenceSchema.nullable(),
    })
    .nullable(),
  attempt: z
    .object({
      attemptId: z.string(),
      state: z.string(),
      dispatchedAt: z.string().nullable(),
      resolvedAt: z.string().nullable(),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
    })
    .nullable(),
  receipt: z.record(z.string(), z.unknown()).nullable(),
  lastError: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** The source lease's volume was held by another lease (or missing) when this was recorded. */
  workspaceConflict: z
    .object({
      volumeId: z.string(),
      heldByLease: z.number().int().nullable(),
      state: z.enum(['Attached', 'Available', 'Missing']),
      detectedAt: z.string(),
    })
    .nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type CleanupView = z.infer<typeof cleanupViewSchema>;

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/** `attempt` is the row of the item's latest release attempt, when it has one. */
export function cleanupView(row: CleanupRow, attempt: AttemptRow | null): CleanupView {
  return {
    cleanupId: row.cleanupId,
    state: row.state,
    foundBy: row.foundBy,
    resourceId: row.resourceId,
    phase: row.resource.phase,
    source: {
      operationId: row.sourceOperationId,
      attemptId: row.sourceAttemptId,
      lifecycleGeneration: row.sourceLifecycleGeneration,
      resourceGeneration: row.sourceResourceGeneration,
      providerFence: row.sourceProviderFence,
    },
    claim:
      row.releaseAttemptId === null
        ? null
        : {
            attemptId: row.releaseAttemptId,
            claimedAt: iso(row.claimedAt),
            expiresAt: iso(row.claimExpiresAt),
            authorizingFence: row.authorizingFence,
          },
    attempt:
      attempt === null
        ? null
        : {
            attemptId: attempt.attemptId,
            state: attempt.state,
            dispatchedAt: iso(attempt.dispatchedAt),
            resolvedAt: iso(attempt.resolvedAt),
            error: attempt.error,
          },
    receipt: row.receipt,
    lastError: row.lastError,
    workspaceConflict: row.workspaceConflict,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
