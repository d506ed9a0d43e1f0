import { z } from 'zod';
import { MAX_INT32 } from '../lib/limits.ts';

/** Path segments and identifiers chosen by callers: URL-safe, bounded. */
export const identifierSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    'must be 1-128 characters of A-Z a-z 0-9 . _ - starting alnum',
  );

export const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** A fence or generation: a positive integer that fits the database's `integer` columns. */
export const generationSchema = z.number().int().positive().max(MAX_INT32, `must be at most ${MAX_INT32}`);
const generation = generationSchema;

export const environmentInputSchema = z.strictObject({
  environmentId: z.string(),
  tenantId: identifierSchema,
  projectId: identifierSchema,
  runId: identifierSchema,
});
export type EnvironmentInput = z.infer<typeof environmentInputSchema>;

export const releaseEventSchema = z.strictObject({
  type: z.literal('environment.release'),
  expectedLifecycleGeneration: generation,
  idempotencyKey: idempotencyKeySchema,
});

/**
 * Advance the Environment's lifecycle generation by one, once per operation key (a resume does,
 * before it provisions its new Sandbox): only from exactly the expected generation, with no current
 * lease and nothing unresolved. Leases, cleanups and releases under the older generation are stale.
 */
export const advanceEventSchema = z.strictObject({
  type: z.literal('environment.advance'),
  operationKey: idempotencyKeySchema,
  expectedLifecycleGeneration: generation,
});

export const workspaceMountSchema = z.strictObject({
  volumeId: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
      'must be 1-128 characters of A-Z a-z 0-9 . _ - starting alnum',
    ),
  resourceGeneration: generation,
  dataGeneration: generation,
  mountPath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]{0,254}$/, 'must be an absolute path of A-Z a-z 0-9 . _ - /')
    .refine((p) => !p.split('/').includes('..'), 'must not contain ..'),
  readOnly: z.boolean(),
});
/** The Workspace volume a lease mounts, at exact resource and data generations. */
export type WorkspaceMount = z.infer<typeof workspaceMountSchema>;

/**
 * UTC with milliseconds, as Date#toISOString writes it: fixed width, so the machine compares two
 * times as strings and needs no clock or Date of its own.
 */
export const instantSchema = z.iso.datetime({ precision: 3 });

const json = z.record(z.string(), z.unknown());

/** Everything a lease needs to be recovered later, frozen at reservation. */
export const provisionEventSchema = z.strictObject({
  type: z.literal('sandbox.provision'),
  operationId: z.string(),
  idempotencyKey: idempotencyKeySchema,
  ownerHash: z.string(),
  workspace: workspaceMountSchema,
  networkPolicyGeneration: generation,
  providerIdentity: json,
  providerOptions: json,
  runSelection: json,
  /** The caller's subject: results are committed under its fresh authority. */
  requestedBy: z.string(),
  /** When the lease expires (null: it does not). Expiry fences it; it never releases it. */
  expiresAt: instantSchema.nullable(),
  /**
   * The AcceptedBuildTestProfile in effect at reservation (its document), which the lease keeps for
   * its life; null or absent (events from before it was recorded): none. The machine never reads
   * it: like the provider identity and options, it is data for the lease row's writer.
   */
  buildTestProfile: json.nullable().optional(),
});

const leaseFences = {
  resourceGeneration: generation,
  providerFence: generation,
};

export const abandonEventSchema = z.strictObject({
  type: z.literal('sandbox.abandon'),
  ...leaseFences,
  idempotencyKey: idempotencyKeySchema,
});

export const reconcileEventSchema = z.strictObject({
  type: z.literal('sandbox.reconcile'),
  operationId: z.string(),
  ...leaseFences,
});

/**
 * The lease's expiry has passed by the sender's clock (`at`): fence first. The current fencing
 * generation moves, so no holder of the old one can write; nothing is released by it.
 */
export const expireEventSchema = z.strictObject({
  type: z.literal('sandbox.expire'),
  ...leaseFences,
  at: instantSchema,
});

/**
 * Asks to move the Active, unexpired lease's expiry to `expiresAt` (Sandlot's clock: now plus the
 * configured time to live); `at` is that clock's now. Opens a renew attempt.
 */
export const renewEventSchema = z.strictObject({
  type: z.literal('sandbox.renew'),
  ...leaseFences,
  idempotencyKey: idempotencyKeySchema,
  expiresAt: instantSchema,
  at: instantSchema,
});

/** A renew attempt's result: the provider moved the term (Succeeded), or it did not or may not have. */
export const renewedEventSchema = z.strictObject({
  type: z.literal('sandbox.renewed'),
  ...leaseFences,
  attemptId: z.string(),
  outcome: z.enum(['Succeeded', 'Failed', 'Unknown', 'Superseded']),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});

/** Asks for a fresh exact observation of the Active lease: opens a describe attempt. */
export const describeEventSchema = z.strictObject({
  type: z.literal('sandbox.describe'),
  ...leaseFences,
});

/**
 * The phases an exact describe can observe, in order. `configured` is never a Kubernetes phase: only
 * a provider whose own describe carries its guest's explicit configured signal reports it (the
 * sandbox-host provider, from a host-signed describe); Kubernetes providers stop at `started`, and
 * their `configured` comes from the AgentHost handshake (actors/sandbox/readiness.ts).
 */
export const sandboxPhases = ['pending', 'scheduled', 'image-ready', 'started', 'configured'] as const;
export type SandboxPhase = (typeof sandboxPhases)[number];

export const observedEventSchema = z.strictObject({
  type: z.literal('sandbox.observed'),
  ...leaseFences,
  phase: z.enum(sandboxPhases),
  finished: z.enum(['PodSucceeded', 'PodFailed']).nullable(),
  /** The Pod that answered (Kubernetes): recorded in the lease's placement when none was yet. */
  podUid: z.string().optional(),
  /**
   * What the provider reported for that Pod (its IP, its Service's DNS name, ...: no credential),
   * sent with `podUid` only. It fills the lease's placement for the mapped Pod, so a lease whose
   * provision read back a pending Pod still learns where its AgentHost answers.
   */
  placement: z.record(z.string(), z.string()).optional(),
  /**
   * Set when the provisioner's fresh authority or the run's pinned selection no longer held as this
   * observation was committed: it is recorded, but the lease is parked (as a provision result is).
   */
  authorityLapse: z.object({ code: z.string(), message: z.string() }).optional(),
});

/**
 * An exact describe answered that the Active lease's resource is gone (the provider said absent; a
 * failed or partial read never says so): the execution is lost, and placement is released.
 */
export const lostEventSchema = z.strictObject({
  type: z.literal('sandbox.lost'),
  ...leaseFences,
});

/** Attempt kinds whose results reach the machine as provider.* events (describe reports as sandbox.observed). */
export const attemptKinds = ['provision', 'release', 'listOwned'] as const;
export type AttemptKind = (typeof attemptKinds)[number];

const attemptFences = {
  attemptId: z.string(),
  kind: z.enum(attemptKinds),
  ...leaseFences,
  fencingGeneration: generation,
};

export const resourceSummarySchema = z.object({
  resourceId: z.string(),
  operationId: z.string(),
  phase: z.string(),
  placement: z.record(z.string(), z.string()),
});
export type ResourceSummary = z.infer<typeof resourceSummarySchema>;

export const succeededEventSchema = z.strictObject({
  type: z.literal('provider.succeeded'),
  ...attemptFences,
  /**
   * provision: the resource; release: the receipt; listOwned: every exactly-owned resource; release:
   * what its exact lookup found of the lease's operation before releasing it (null: not reported).
   */
  resource: resourceSummarySchema.nullable(),
  receipt: json.nullable(),
  resources: z.array(resourceSummarySchema).nullable(),
  /**
   * release only: unresolved provision attempts of the lease that the provider proves can no longer
   * take effect (their in-flight window had passed when the release's exact lookup began, or the
   * provider holds a signed answer for each of its calls), so that lookup finding nothing settles them.
   */
  settledCalls: z.array(z.string()).optional(),
  /**
   * Set when the fresh authority of the subject the result is committed under (a provision's or
   * listing's provisioner, a release's requester) or the run's pinned selection no longer held as
   * this result was committed: the result stands, but the lease is parked, not dispatchable.
   */
  authorityLapse: z.object({ code: z.string(), message: z.string() }).optional(),
});

export const failedEventSchema = z.strictObject({
  type: z.literal('provider.failed'),
  ...attemptFences,
  error: z.object({ code: z.string(), message: z.string() }),
  /**
   * The worker refused the attempt before calling the provider (network policy not verified, the
   * provider changed): proof about this attempt only, never about an earlier one of the operation.
   */
  madeNoCall: z.literal(true).optional(),
});

export const unknownEventSchema = z.strictObject({
  type: z.literal('provider.unknown'),
  ...attemptFences,
  error: z.object({ code: z.string(), message: z.string() }),
});

/** The worker found the attempt's lease moved on and resolved it without calling the provider. */
export const supersededEventSchema = z.strictObject({
  type: z.literal('provider.superseded'),
  ...attemptFences,
});

export const cleanupSourceSchema = z.strictObject({
  operationId: z.string(),
  lifecycleGeneration: generation,
  resourceGeneration: generation,
  providerFence: generation,
  ownerHash: z.string(),
  providerOptions: json,
  workspace: workspaceMountSchema,
});

export const lateResourceSchema = z.strictObject({
  cleanupId: z.string(),
  source: cleanupSourceSchema,
  resource: resourceSummarySchema,
});
export type LateResource = z.infer<typeof lateResourceSchema>;

/**
 * Valid resources of ours that no current lease owns, found by one attempt (its late result, or an
 * owner listing): each gets a late-resource cleanup record unless it has one already.
 */
export const cleanupRecordedEventSchema = z.strictObject({
  type: z.literal('cleanup.recorded'),
  foundBy: z.enum(['late-result', 'owner-listing']),
  sourceAttemptId: z.string().nullable(),
  items: z.array(lateResourceSchema).min(1),
});

/**
 * Asks for sweep number `sweep` of a terminal lease: an exact owner listing under its owner hash
 * and fence, for a late resource whose result never arrived. The lease's frozen request rides along.
 */
export const cleanupSweepEventSchema = z.strictObject({
  type: z.literal('cleanup.sweep'),
  ...cleanupSourceSchema.shape,
  fencingGeneration: generation,
  networkPolicyGeneration: generation,
  sweep: generation,
});

/** A reconciler claims one cleanup item until `expiresAt`; `at` is its clock. */
export const cleanupClaimEventSchema = z.strictObject({
  type: z.literal('cleanup.claim'),
  cleanupId: z.string(),
  claimToken: z.string(),
  at: instantSchema,
  expiresAt: instantSchema,
});

const cleanupAttempt = { cleanupId: z.string(), attemptId: z.string(), claimToken: z.string() };

export const cleanupReleasedEventSchema = z.strictObject({
  type: z.literal('cleanup.released'),
  ...cleanupAttempt,
  receipt: json,
});

/** The cleanup's release failed, its outcome is unknown, or it was not dispatched: retry later. */
export const cleanupFailedEventSchema = z.strictObject({
  type: z.literal('cleanup.failed'),
  ...cleanupAttempt,
  error: z.object({ code: z.string(), message: z.string() }),
});

// ---- The commands region (BuildTest operations on the current lease). The caller never supplies a
// command: `command.reserve` carries what Core accepted for a checkpoint, resolved by the actor
// under current authority, and the lease binding the caller expects.

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lower-case SHA-256 hex digest');

/** The lease a command runs on, exactly: a command is never moved to another lease or volume. */
export const commandLeaseSchema = z.strictObject({
  operationId: z.string(),
  lifecycleGeneration: generation,
  resourceGeneration: generation,
  providerFence: generation,
  fencingGeneration: generation,
  resourceId: z.string(),
  ownerHash: z.string(),
  workspace: workspaceMountSchema,
  networkPolicyGeneration: generation,
  providerOptions: json,
});
export type CommandLease = z.infer<typeof commandLeaseSchema>;

/** The intent, written once before any provider effect. */
export const commandIntentSchema = z.strictObject({
  checkpoint: json,
  acceptedCommand: json,
  acceptedCommandHash: sha256Hex,
  requestFingerprint: sha256Hex,
  expectedBinding: json,
  profileHash: sha256Hex,
});
export type CommandIntent = z.infer<typeof commandIntentSchema>;

export const commandReserveEventSchema = z.strictObject({
  type: z.literal('command.reserve'),
  operationId: identifierSchema,
  lease: commandLeaseSchema,
  intent: commandIntentSchema,
});

export const commandSteps = ['command', 'collect', 'cleanup'] as const;
export type CommandStep = (typeof commandSteps)[number];

/**
 * What one step's attempt found. `advanced`: the command exited 0, collection is next; `sealed`:
 * the collector sealed its receipt (and, version 2, the document); `running`: not finished by the
 * call's deadline (the reconciler looks again); `unknown`: the outcome is uncertain; `cleaned`: the
 * exact Pods are gone.
 */
export const commandOutcomes = [
  'advanced',
  'sealed',
  'failed',
  'interrupted',
  'running',
  'unknown',
  'cleaned',
] as const;
export type CommandOutcome = (typeof commandOutcomes)[number];

export const commandSteppedEventSchema = z.strictObject({
  type: z.literal('command.stepped'),
  operationId: identifierSchema,
  attemptId: z.string(),
  step: z.enum(commandSteps),
  outcome: z.enum(commandOutcomes),
  /** The step's evidence, written to the operation row by the same transition. */
  evidence: json,
});

/** Look again at an operation that is uncertain or still running: the same step, never a new Pod. */
export const commandReconcileEventSchema = z.strictObject({
  type: z.literal('command.reconcile'),
  operationId: identifierSchema,
});

/** Core verified the Events journal acknowledgment of the capture: save it, then clean up. */
export const commandAcknowledgedEventSchema = z.strictObject({
  type: z.literal('command.acknowledged'),
  operationId: identifierSchema,
  acknowledgment: json,
});

export const commandEventSchemas = [
  commandReserveEventSchema,
  commandSteppedEventSchema,
  commandReconcileEventSchema,
  commandAcknowledgedEventSchema,
] as const;

// ---- The workspace region (trusted Workspace flushes). A flush is reserved for the exact volume
// transition of the current Active lease, journaled before the Host is asked, and only a verified
// receipt advances the volume's data generation (docs/suspend-resume.md).

/** The lease a flush is for, exactly as Core's operation names its placement. */
export const flushLeaseSchema = z.strictObject({
  operationId: z.string(),
  resourceGeneration: generation,
  providerFence: generation,
});

/** What a flush is reserved for; immutable once reserved. */
export const flushTermsSchema = z.strictObject({
  volumeId: identifierSchema,
  /** Core's suspend operation and the step it serves. */
  coreOperationId: z.string().min(1).max(200),
  stepId: identifierSchema,
  lease: flushLeaseSchema,
  /** The volume's transition revision the flush is for (its `revision` when reserved). */
  transitionRevision: generation,
  /** The data generation the volume is at; a verified flush moves it to this plus one. */
  dataGeneration: z.number().int().min(0).max(MAX_INT32),
});
export type FlushTerms = z.infer<typeof flushTermsSchema>;

export const flushReserveEventSchema = z.strictObject({
  type: z.literal('workspace.flushReserve'),
  flushOperationId: identifierSchema,
  terms: flushTermsSchema,
});

/** Another delivery of an open flush (after a lost or uncertain answer): journaled before it runs. */
export const flushRedeliverEventSchema = z.strictObject({
  type: z.literal('workspace.flushRedeliver'),
  flushOperationId: identifierSchema,
});

export const flushOutcomes = ['verified', 'uncertain', 'refused'] as const;
export type FlushOutcome = (typeof flushOutcomes)[number];

/**
 * What a delivery found. `verified`: the Host's receipt matched field by field (the evidence is the
 * receipt, with its SHA-256); `uncertain`: no answer, or one that does not match (kept, never
 * advancing); `refused`: the Host refused before flushing anything.
 */
export const flushedEventSchema = z.strictObject({
  type: z.literal('workspace.flushed'),
  flushOperationId: identifierSchema,
  outcome: z.enum(flushOutcomes),
  evidence: json,
  receiptSha256: sha256Hex.nullable(),
});

export const workspaceEventSchemas = [
  flushReserveEventSchema,
  flushRedeliverEventSchema,
  flushedEventSchema,
] as const;

export const environmentEventSchema = z.discriminatedUnion('type', [
  releaseEventSchema,
  advanceEventSchema,
  provisionEventSchema,
  abandonEventSchema,
  reconcileEventSchema,
  describeEventSchema,
  renewEventSchema,
  renewedEventSchema,
  expireEventSchema,
  observedEventSchema,
  lostEventSchema,
  succeededEventSchema,
  failedEventSchema,
  unknownEventSchema,
  supersededEventSchema,
  cleanupRecordedEventSchema,
  cleanupSweepEventSchema,
  cleanupClaimEventSchema,
  cleanupReleasedEventSchema,
  cleanupFailedEventSchema,
  ...commandEventSchemas,
  ...workspaceEventSchemas,
]);
export type EnvironmentEvent = z.infer<typeof environmentEventSchema>;
export type ProviderResultEvent = Extract<EnvironmentEvent, { type: `provider.${string}` }>;
