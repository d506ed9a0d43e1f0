// Readiness for dispatch, as conditions a caller can read one by one. Each condition has a type, a
// status (True, False or Unknown when a source could not answer), a reason, a message and the
// lease's resource generation it was observed at. `readyForDispatch` is true only when all are
// True: the lease is the same current, Active, unexpired lease across every fresh read; an exact
// fresh describe saw the mapped Pod started; the sandbox is in the explicit `configured` phase; the
// network policy generation verifies fresh; and the Workspace is Attached to this lease at the
// exact generation. `configured` is never inferred from `started` and never NotApplicable: with an
// AgentHost (`vm-isolation`), the Host says it completed its configuration handshake for exactly
// this lease, Pod, mount path and network generation (the provider never reports it by itself),
// and a runtime profile it names must still be this lease's at its current endpoint;
// without one (sandbox-host), the provider's exact fresh describe must report it (its host-signed
// result carries the guest's explicit signal), and `started` alone is NotConfigured. A check the
// lease's provider does not advertise the capability for (actors/sandbox/provider-applicability.ts: no Pod
// network, no Workspace volume) is True with reason NotApplicable, saying which capability is
// missing; its port is not asked. The status enum is the same for every provider.
import { z } from 'zod';
import { workspaceMountSchema, type WorkspaceMount } from '../../machines/environment-events.ts';
import type { LeaseRow } from '../../store/leases.ts';
import type { VolumeRow } from '../../store/workspaces.ts';
import type { AgentHostEndpoint, AgentHostReadiness, AgentHostTarget } from '../ports.ts';
import type { ProfileEvidence } from './readiness-profile.ts';
import {
  recordedApplicability,
  requiredCapability,
  type ProviderApplicability,
} from './provider-applicability.ts';
import type { Observation } from './observe.ts';

export const readinessConditionTypes = [
  'LeaseCurrent',
  'LeaseUnexpired',
  'SandboxObserved',
  'HostConfigured',
  'NetworkPolicyVerified',
  'WorkspaceAttached',
] as const;
export type ReadinessConditionType = (typeof readinessConditionTypes)[number];

export const conditionSchema = z.object({
  type: z.enum(readinessConditionTypes),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  /** The lease's resource generation the condition was observed at (null: no lease). */
  observedGeneration: z.number().int().nullable(),
});
export type ReadinessCondition = z.infer<typeof conditionSchema>;

/** The provision request the lease's recovery record keeps: where readiness takes its bindings. */
export interface RecordedRequest {
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  /** The resume a resume's new lease was provisioned for (absent on every other lease). */
  resume?: { operationId: string } | undefined;
}

const recoveryRecordSchema = z.object({
  operationId: z.string(),
  resourceGeneration: z.number().int(),
  providerFence: z.number().int(),
  provision: z
    .object({
      workspace: workspaceMountSchema,
      networkPolicyGeneration: z.number().int(),
      resume: z.object({ operationId: z.string() }).optional(),
    })
    .optional(),
});

/**
 * The validated recovery record's nested provision request; null when the record does not name
 * this lease. Leases recorded before the request was nested fall back to the lease's own columns,
 * which the same insert wrote.
 */
export function recordedRequestOf(lease: LeaseRow): RecordedRequest | null {
  const parsed = recoveryRecordSchema.safeParse(lease.recoveryRequest);
  if (!parsed.success) return null;
  const record = parsed.data;
  if (
    record.operationId !== lease.operationId ||
    record.resourceGeneration !== lease.resourceGeneration ||
    record.providerFence !== lease.providerFence
  ) {
    return null;
  }
  return (
    record.provision ?? { workspace: lease.workspace, networkPolicyGeneration: lease.networkPolicyGeneration }
  );
}

/** The fences and state that make two reads of a lease the same lease. */
export function sameLease(a: LeaseRow, b: LeaseRow): boolean {
  return (
    a.environmentId === b.environmentId &&
    a.operationId === b.operationId &&
    a.resourceGeneration === b.resourceGeneration &&
    a.providerFence === b.providerFence &&
    a.currentFencingGeneration === b.currentFencingGeneration &&
    a.state === b.state &&
    a.expiredAt?.getTime() === b.expiredAt?.getTime() &&
    a.expiresAt?.getTime() === b.expiresAt?.getTime()
  );
}

export function isExpired(lease: LeaseRow, now: Date): boolean {
  return lease.expiredAt !== null || (lease.expiresAt !== null && lease.expiresAt <= now);
}

/** Where the lease's AgentHost answers, from the placement the provider recorded (if it has one). */
export function agentHostEndpointOf(lease: LeaseRow): AgentHostEndpoint | null {
  const placement = lease.resource?.placement ?? {};
  const { podIP: podIp, podUid, serviceDns } = placement;
  if (podIp === undefined || podUid === undefined || serviceDns === undefined) return null;
  return { podIp, podUid, serverName: serviceDns, port: 8443 };
}

export function agentHostTargetOf(lease: LeaseRow): AgentHostTarget {
  return {
    environmentId: lease.environmentId,
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    resourceId: lease.resource?.resourceId ?? '',
    endpoint: agentHostEndpointOf(lease),
  };
}

/** What the inspection saw, each read fresh; `host` is absent when the Host was not asked. */
export interface ReadinessEvidence {
  /** The lease as first read, and as read again after every observation. */
  first: LeaseRow;
  last: LeaseRow | null;
  now: Date;
  observation: Observation | null;
  /** The Pod UID the lease mapped, when the answering Pod is another one. */
  replacedPod: { seen: string; mapped: string } | null;
  host: { answer: AgentHostReadiness } | { error: string } | null;
  /** The runtime profile the configured Host named, judged against its stored mapping (null: none). */
  profile?: ProfileEvidence | null;
  network: { requested: number | undefined; verified: boolean | 'unavailable' };
  volume: VolumeRow | null;
  /**
   * The data generation the lease's latest verified suspend flush moved its Workspace to (absent or
   * null: the lease has none). Such a lease is suspending: it takes no new work.
   */
  flushedTo?: number | null;
  /** Open late-resource cleanups of the Environment whose Workspace conflict names this volume. */
  workspaceConflicts?: readonly { cleanupId: string; resourceId: string; sourceLease: number }[];
}

type Status = ReadinessCondition['status'];

/** The six conditions, in a fixed order. */
export function readinessConditions(evidence: ReadinessEvidence): ReadinessCondition[] {
  const { first, last, now } = evidence;
  const generation = first.resourceGeneration;
  const condition = (
    type: ReadinessConditionType,
    status: Status,
    reason: string,
    message: string,
  ): ReadinessCondition => ({ type, status, reason, message, observedGeneration: generation });
  const request = recordedRequestOf(first);
  const { providerId, applies } = recordedApplicability(first.providerIdentity);
  const notApplicable = (type: ReadinessConditionType, check: keyof ProviderApplicability, what: string) =>
    condition(
      type,
      'True',
      'NotApplicable',
      `the ${providerId} provider ${what} (no ${requiredCapability[check]} capability)`,
    );
  return [
    leaseCurrent(first, last, request, condition),
    isExpired(last ?? first, now)
      ? condition(
          'LeaseUnexpired',
          'False',
          'Expired',
          'the lease expired; renew it before it expires, or provision a new one',
        )
      : condition(
          'LeaseUnexpired',
          'True',
          'Unexpired',
          first.expiresAt === null
            ? 'the lease does not expire'
            : `the lease expires at ${first.expiresAt.toISOString()}`,
        ),
    sandboxObserved(evidence, condition),
    applies.agentHost
      ? hostConfigured(evidence, request, condition)
      : observedConfigured(evidence, providerId, condition),
    applies.networkPolicy
      ? networkVerified(evidence, request, condition)
      : notApplicable('NetworkPolicyVerified', 'networkPolicy', 'runs no Pod network for a policy to select'),
    // A conflict is Sandlot's own attachment record, so it shows whatever the provider can attach.
    workspaceConflict(evidence, condition) ??
      (applies.workspaceStorage
        ? workspaceAttached(evidence, request, condition)
        : notApplicable('WorkspaceAttached', 'workspaceStorage', 'attaches no Workspace volume')),
  ];
}

/** A late resource of an earlier lease may still mount this lease's volume: until it is released. */
function workspaceConflict(evidence: ReadinessEvidence, make: Make): ReadinessCondition | null {
  const [conflict, ...more] = evidence.workspaceConflicts ?? [];
  if (conflict === undefined) return null;
  const others = more.length === 0 ? '' : ` (and ${more.length} more)`;
  return make(
    'WorkspaceAttached',
    'False',
    'WorkspaceConflict',
    `late resource ${conflict.resourceId} of lease ${conflict.sourceLease} (cleanup ${conflict.cleanupId})${others} may still mount Workspace volume ${evidence.volume?.volumeId ?? ''}: it is released first`,
  );
}

type Make = (
  type: ReadinessConditionType,
  status: Status,
  reason: string,
  message: string,
) => ReadinessCondition;

function leaseCurrent(first: LeaseRow, last: LeaseRow | null, request: RecordedRequest | null, make: Make) {
  if (first.state !== 'Active')
    return make('LeaseCurrent', 'False', 'NotActive', `the lease is ${first.state}`);
  if (last === null || !sameLease(first, last)) {
    return make(
      'LeaseCurrent',
      'False',
      'LeaseMoved',
      'the lease changed while it was being observed; ask again',
    );
  }
  if (request === null) {
    return make(
      'LeaseCurrent',
      'False',
      'RecoveryRecordInvalid',
      "the lease's recovery record does not name this lease",
    );
  }
  return make('LeaseCurrent', 'True', 'Active', 'the same current Active lease across every fresh read');
}

function sandboxObserved(evidence: ReadinessEvidence, make: Make): ReadinessCondition {
  const { observation, replacedPod } = evidence;
  if (observation === null)
    return make('SandboxObserved', 'False', 'NotObserved', 'only an Active lease is observed');
  if (observation.error?.code === 'not-yet-observed')
    return make('SandboxObserved', 'Unknown', 'NotYetObserved', observation.error.message);
  if (observation.error !== null) {
    return make(
      'SandboxObserved',
      'Unknown',
      'ObservationFailed',
      `${observation.error.code}: ${observation.error.message}`,
    );
  }
  if (!observation.exact)
    return make('SandboxObserved', 'False', 'Absent', 'the provider answered that the sandbox is absent');
  if (replacedPod !== null) {
    return make(
      'SandboxObserved',
      'False',
      'PodReplaced',
      `the Pod answering (UID ${replacedPod.seen}) is not the one this lease mapped (UID ${replacedPod.mapped})`,
    );
  }
  if (observation.finished !== null) {
    return make('SandboxObserved', 'False', 'Finished', `the sandbox finished (${observation.finished})`);
  }
  if (!isRunning(observation.phase)) {
    return make(
      'SandboxObserved',
      'False',
      'NotStarted',
      `the sandbox is ${observation.phase ?? 'in no phase'}, not started`,
    );
  }
  return make(
    'SandboxObserved',
    'True',
    'Started',
    `an exact fresh observation saw the sandbox ${observation.phase ?? 'started'}`,
  );
}

/** Started, or past it: `configured` is reported only by a sandbox that started. */
export function isRunning(phase: string | null): boolean {
  return phase === 'started' || phase === 'configured';
}

/**
 * The configured phase of a provider that runs no AgentHost: only its own exact, fresh describe can
 * say so (sandbox-host: the host-signed result, once the guest reported). Never inferred from
 * `started`; there is no handshake to ask.
 */
function observedConfigured(evidence: ReadinessEvidence, providerId: string, make: Make): ReadinessCondition {
  const { observation } = evidence;
  const noHost = `the ${providerId} provider runs no AgentHost (no ${requiredCapability.agentHost} capability)`;
  if (
    observation === null ||
    !observation.exact ||
    observation.error !== null ||
    observation.finished !== null ||
    evidence.replacedPod !== null
  ) {
    return make(
      'HostConfigured',
      'Unknown',
      'NotObserved',
      `${noHost}: only an exact fresh describe of the running sandbox can report it configured`,
    );
  }
  if (observation.phase !== 'configured') {
    return make(
      'HostConfigured',
      'False',
      'NotConfigured',
      `${noHost}, and its describe reports the sandbox ${observation.phase ?? 'in no phase'}, not configured: its guest has not reported its configuration`,
    );
  }
  return make(
    'HostConfigured',
    'True',
    'Configured',
    `${noHost}; its exact fresh describe reports the sandbox configured (its guest said so)`,
  );
}

function hostConfigured(
  evidence: ReadinessEvidence,
  request: RecordedRequest | null,
  make: Make,
): ReadinessCondition {
  const { host, first } = evidence;
  if (host === null) {
    return make(
      'HostConfigured',
      'Unknown',
      'NotAsked',
      'the AgentHost is asked only once the sandbox is observed started',
    );
  }
  if ('error' in host) return make('HostConfigured', 'Unknown', 'HostUnavailable', host.error);
  const answer = host.answer;
  if (!answer.configured) return make('HostConfigured', 'False', 'NotConfigured', answer.reason);
  const podUid = first.resource?.placement['podUid'] ?? null;
  const mismatches = [
    answer.environmentId !== first.environmentId && 'Environment',
    answer.operationId !== first.operationId && 'operation',
    answer.resourceGeneration !== first.resourceGeneration && 'resource generation',
    podUid !== null && answer.podUid !== podUid && 'Pod UID',
    request !== null && answer.workspaceMountPath !== request.workspace.mountPath && 'Workspace mount path',
    request !== null &&
      answer.networkPolicyGeneration !== request.networkPolicyGeneration &&
      'network policy generation',
  ].filter((m): m is string => m !== false);
  if (mismatches.length > 0) {
    return make(
      'HostConfigured',
      'False',
      'ConfiguredForAnother',
      `the AgentHost was configured for another ${mismatches.join(', ')}`,
    );
  }
  const { profile } = evidence;
  if (profile != null && profile.problem === 'unresolved') {
    return make(
      'HostConfigured',
      'False',
      'ProfileUnresolved',
      `the AgentHost was configured through runtime profile ${profile.profileId}, which was never resolved for this Environment`,
    );
  }
  if (profile != null && profile.problem !== null) {
    return make(
      'HostConfigured',
      'False',
      'ProfileStale',
      `the AgentHost was configured through runtime profile ${profile.profileId}, whose stored mapping no longer matches this lease (${profile.problem} changed): resolve a new profile and configure the Host with it`,
    );
  }
  return make(
    'HostConfigured',
    'True',
    'Configured',
    `the AgentHost completed its configuration at ${answer.configuredAt}`,
  );
}

function networkVerified(
  evidence: ReadinessEvidence,
  request: RecordedRequest | null,
  make: Make,
): ReadinessCondition {
  const { requested, verified } = evidence.network;
  if (requested === undefined) {
    return make(
      'NetworkPolicyVerified',
      'False',
      'NotRequested',
      'pass networkPolicyGeneration to verify the network policy',
    );
  }
  if (request === null || requested !== request.networkPolicyGeneration) {
    return make(
      'NetworkPolicyVerified',
      'False',
      'GenerationMismatch',
      `generation ${requested} is not the lease's network policy generation ${request?.networkPolicyGeneration ?? '(unknown)'}`,
    );
  }
  if (verified === 'unavailable') {
    return make(
      'NetworkPolicyVerified',
      'Unknown',
      'VerifierUnavailable',
      'the network policy source could not answer',
    );
  }
  return verified
    ? make(
        'NetworkPolicyVerified',
        'True',
        'Verified',
        `generation ${requested} is the project's policy in force`,
      )
    : make(
        'NetworkPolicyVerified',
        'False',
        'NotInForce',
        `generation ${requested} is not the project's policy in force`,
      );
}

function workspaceAttached(
  evidence: ReadinessEvidence,
  request: RecordedRequest | null,
  make: Make,
): ReadinessCondition {
  const { volume, first } = evidence;
  const wanted = request?.workspace ?? first.workspace;
  if (volume === null)
    return make('WorkspaceAttached', 'False', 'VolumeMissing', `no Workspace volume ${wanted.volumeId}`);
  if (
    volume.state !== 'Attached' ||
    volume.attachedLease !== first.resourceGeneration ||
    volume.environmentId !== first.environmentId
  ) {
    return make(
      'WorkspaceAttached',
      'False',
      'NotAttached',
      `Workspace volume ${volume.volumeId} is not attached to this lease`,
    );
  }
  const { flushedTo } = evidence;
  if (
    flushedTo != null &&
    volume.resourceGeneration === wanted.resourceGeneration &&
    volume.dataGeneration === flushedTo &&
    flushedTo > wanted.dataGeneration
  ) {
    return make(
      'WorkspaceAttached',
      'False',
      'FlushedForSuspend',
      `Workspace volume ${volume.volumeId} was flushed for a suspend (data generation ${wanted.dataGeneration} → ${flushedTo}): this lease takes no new work`,
    );
  }
  if (
    volume.resourceGeneration !== wanted.resourceGeneration ||
    volume.dataGeneration !== wanted.dataGeneration
  ) {
    return make(
      'WorkspaceAttached',
      'False',
      'GenerationMismatch',
      `Workspace volume ${volume.volumeId} is at resource generation ${volume.resourceGeneration}, data generation ${volume.dataGeneration}`,
    );
  }
  return make(
    'WorkspaceAttached',
    'True',
    'Attached',
    `Workspace volume ${volume.volumeId} is attached at the exact generation`,
  );
}
