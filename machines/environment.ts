// The Environment machine: pure (no I/O, clock or randomness). Parallel regions: `lifecycle`
// (Registered → Releasing → Released), `sandbox` (the current lease), `cleanup` (late resources)
// and `commands` (BuildTest operations on the current lease). Effects are
// named actions `effect.*` (outbox rows); `record.*` actions are row writes the runtime performs
// in the same transaction (lease rows, reconciled attempts).
import { and, not, or, stateIn } from 'xstate';
import { environmentSetup } from './environment-setup.ts';
import { cleanupRegion, commandsRegion, workspaceRegion } from './environment-regions.ts';
import { type EnvironmentContext, type LeaseContext, type SandboxState } from './environment-context.ts';
import { effectFor, leaseRecord, reservationOf, type AttemptResolution } from './environment-effects.ts';
import type { EnvironmentEvent } from './environment-events.ts';
import * as u from './environment-updates.ts';

const lease = (context: EnvironmentContext): LeaseContext => {
  if (context.sandbox.lease === null) throw new Error('no lease in context');
  return context.sandbox.lease;
};

const record = (state: SandboxState) => ({
  type: 'record.lease' as const,
  params: ({ context, event }: { context: EnvironmentContext; event: EnvironmentEvent }) =>
    leaseRecord(
      lease(context),
      state,
      event.type === 'provider.succeeded' && event.kind === 'release' ? event.receipt : null,
    ),
});

type ResolvedAs =
  AttemptResolution['state'] | { release: AttemptResolution['state']; provision: AttemptResolution['state'] };
const resolveAll = (as: ResolvedAs, resolution: string) => ({
  type: 'record.attemptsResolved' as const,
  params: ({ context }: { context: EnvironmentContext }) =>
    u.unresolvedOfLease(context).map((attemptId) => {
      const kind = context.sandbox.unresolved[attemptId]?.kind ?? 'provision';
      return { attemptId, state: typeof as === 'string' ? as : as[kind], resolution };
    }),
});

/** Why an unresolved attempt was settled by evidence other than its own result. */
const RESOLVED = {
  byRetry: 'the same deterministic resource was created or adopted by a retry under the same operation',
  released: 'a later release of the lease released its resource and confirmed it absent (KnownOwnedAbsent)',
  found: "the release's exact lookup found the operation's resource and released it (KnownOwnedAbsent)",
  proven:
    "the provider proves the call can no longer take effect, and the release's exact lookup after that found nothing",
} as const;

/**
 * The lease's other unresolved attempts that a current release's result is evidence about, each
 * with the evidence (see evidencedBy); the rest stay unresolved.
 */
const resolveEvidenced = {
  type: 'record.attemptsResolved' as const,
  params: ({ context, event }: { context: EnvironmentContext; event: EnvironmentEvent }) =>
    u.evidencedOfLease({ context, event }).map((attemptId) => {
      const kind = context.sandbox.unresolved[attemptId]?.kind;
      const own = context.sandbox.lease?.operationId;
      const found =
        event.type === 'provider.succeeded' && (event.resources ?? []).some((r) => r.operationId === own);
      const resolution = kind === 'release' ? RESOLVED.released : found ? RESOLVED.found : RESOLVED.proven;
      return { attemptId, state: 'Superseded' as const, resolution };
    }),
};

/** A current release answered while another call may still land: settle what it proves, keep the rest. */
const releaseAnsweredUnsettled = [
  'settleAttempt' as const,
  resolveEvidenced,
  'settleEvidenced' as const,
  'confirmRelease' as const,
  'recordReleaseUnsettled' as const,
  { type: 'setRecovering' as const, params: { what: 'release' as const } },
];

/**
 * A current release answered, and was evidence for every other attempt, but the authority it is
 * committed under lapsed: released, yet the lease is parked, not Released, until a caller with
 * current authority releases it again.
 */
const releaseAnsweredParked = [
  'settleAttempt' as const,
  resolveEvidenced,
  'settleAllUnresolved' as const,
  'confirmRelease' as const,
  'parkForAuthority' as const,
];

const open = (kind: u.LeaseEffectKind) => [
  { type: 'openAttempt' as const, params: { kind } },
  {
    type: 'effect.provider' as const,
    params: ({ context }: { context: EnvironmentContext }) =>
      effectFor(lease(context), context.sandbox.openedAttemptId ?? '', kind),
  },
];

const current = (kind: 'provision' | 'release' | 'listOwned') => ({
  type: 'currentAttempt' as const,
  params: { kind },
});
const stale = (kind: 'provision' | 'release') => ({ type: 'staleAttempt' as const, params: { kind } });
const recoveringRelease = { type: 'setRecovering' as const, params: { what: 'release' as const } };
/** A result of an attempt opened before the last abandon (it settles; it never drives the lease). */
const staleAny = or([stale('provision'), stale('release')]);
const recoveringProvision = { type: 'recovering' as const, params: { what: 'provision' as const } };
/** A new lease (next resource generation) from NoLease, Released or Failed: never a revival. */
const provisionNewLease = {
  guard: stateIn({ lifecycle: 'Registered' }),
  target: 'Provisioning' as const,
  actions: [
    'reserveLease' as const,
    {
      type: 'record.leaseReserved' as const,
      params: ({ context }: { context: EnvironmentContext }) => reservationOf(lease(context)),
    },
  ],
};
const terminalSandbox = or([
  stateIn({ sandbox: 'NoLease' }),
  stateIn({ sandbox: 'Released' }),
  stateIn({ sandbox: 'Failed' }),
]);

export const environmentMachine = environmentSetup.createMachine({
  id: 'environment',
  type: 'parallel',
  context: ({ input }) => ({
    environmentId: input.environmentId,
    tenantId: input.tenantId,
    projectId: input.projectId,
    runId: input.runId,
    // The first durable lifecycle generation is registered from expected generation zero.
    lifecycleGeneration: 1,
    release: null,
    sandbox: {
      counters: { resourceGeneration: 0, providerFence: 0, attemptSeq: 0 },
      lease: null,
      unresolved: {},
      openedAttemptId: null,
    },
    cleanups: {},
    commands: {},
    flushes: {},
    advances: {},
  }),
  states: {
    lifecycle: {
      initial: 'Registered',
      states: {
        Registered: {
          on: {
            'environment.release': {
              guard: 'releaseAllowed',
              target: 'Releasing',
              actions: 'recordReleaseRequest',
            },
            // The lifecycle generation moves by one with no lease current (resume, before its
            // new Sandbox): what the older generation authorized is stale from here on.
            'environment.advance': {
              guard: and(['advanceAllowed', terminalSandbox, 'noUnresolved', 'noOpenCleanup']),
              actions: 'advanceLifecycle',
            },
          },
        },
        // Completes only once placement is retired and no provider attempt is unresolved.
        Releasing: {
          always: { guard: and([terminalSandbox, 'noUnresolved', 'noOpenCleanup']), target: 'Released' },
        },
        // Not `final`: a later cleanup region may still take events after release.
        Released: {},
      },
    },
    sandbox: {
      initial: 'NoLease',
      on: {
        // A result for an attempt opened before an abandon: settle it wherever the lease now is.
        'provider.superseded': {
          guard: or([stale('provision'), stale('release')]),
          actions: 'settleAttempt',
        },
      },
      states: {
        NoLease: {
          on: {
            'sandbox.provision': provisionNewLease,
          },
        },
        Provisioning: {
          entry: [...open('provision'), record('Provisioning')],
          on: {
            // Provision is idempotent per operation: this result is the one deterministic resource,
            // so it is also the evidence for any earlier attempt of the operation left Unknown.
            'provider.succeeded': [
              // The result stands, but the subject's authority lapsed: parked, never dispatchable.
              {
                guard: and([current('provision'), 'authorityLapsed']),
                target: 'ReconciliationRequired',
                actions: [
                  'settleAttempt',
                  'adoptResource',
                  resolveAll('Succeeded', RESOLVED.byRetry),
                  'settleAllUnresolved',
                  'parkForAuthority',
                ],
              },
              {
                guard: current('provision'),
                target: 'Active',
                actions: [
                  'settleAttempt',
                  'adoptResource',
                  resolveAll('Succeeded', RESOLVED.byRetry),
                  'settleAllUnresolved',
                ],
              },
            ],
            'provider.failed': [
              // A failure of this call (even a refusal before any call) proves nothing about an
              // earlier call of the operation, which may still land: the lease waits, visibly, with
              // the failure as its reason, until evidence about that call settles it.
              {
                guard: and([current('provision'), 'othersUnresolved']),
                target: 'ReconciliationRequired',
                actions: [
                  'settleAttempt',
                  'recordFailure',
                  { type: 'setRecovering', params: { what: 'provision' } },
                ],
              },
              { guard: current('provision'), target: 'Failed', actions: ['settleAttempt', 'recordFailure'] },
            ],
            'provider.unknown': {
              guard: current('provision'),
              target: 'ReconciliationRequired',
              actions: ['markUnknown', { type: 'setRecovering', params: { what: 'provision' } }],
            },
            'provider.superseded': {
              guard: current('provision'),
              target: 'ReconciliationRequired',
              actions: ['settleAttempt', { type: 'setRecovering', params: { what: 'provision' } }],
            },
            'sandbox.abandon': { guard: 'leaseMatches', target: 'Releasing', actions: 'beginRelease' },
          },
        },
        Active: {
          entry: record('Active'),
          on: {
            'sandbox.observed': [
              {
                guard: 'observedFinished',
                target: 'Releasing',
                actions: ['recordObservation', 'beginRelease'],
              },
              // Recorded, but the provisioner's authority lapsed: parked, never dispatchable.
              {
                guard: and(['leaseMatches', 'authorityLapsed']),
                target: 'ReconciliationRequired',
                actions: ['recordObservation', 'parkForAuthority'],
              },
              { guard: 'leaseMatches', actions: ['recordObservation', record('Active')] },
            ],
            // The sandbox disappeared while Active: the execution is lost; release what is left
            // (the release's exact lookup proves it gone) and let the caller provision again.
            'sandbox.lost': {
              guard: 'leaseMatches',
              target: 'Releasing',
              actions: ['markLost', 'beginRelease'],
            },
            'sandbox.abandon': { guard: 'leaseMatches', target: 'Releasing', actions: 'beginRelease' },
            'environment.release': { guard: 'releaseAllowed', target: 'Releasing', actions: 'beginRelease' },
            // Expired: fence first (the current fencing generation moves); it stays Active but is
            // never ready again, and only an explicit release or abandon ends it.
            'sandbox.expire': {
              guard: and(['leaseMatches', 'expiryDue']),
              actions: ['expireLease', record('Active')],
            },
            // A fresh exact observation (inspection, the periodic observer): a read-only attempt.
            'sandbox.describe': { guard: 'leaseMatches', actions: open('describe') },
            // Renewal: the provider moves its term first; the expiry moves when that is confirmed.
            'sandbox.renew': {
              guard: and(['leaseMatches', 'renewAllowed']),
              actions: [
                { type: 'openAttempt', params: { kind: 'renew' } },
                'beginRenewal',
                {
                  type: 'effect.provider',
                  params: ({ context }: { context: EnvironmentContext }) =>
                    effectFor(lease(context), context.sandbox.openedAttemptId ?? '', 'renew'),
                },
                record('Active'),
              ],
            },
            'sandbox.renewed': {
              guard: and(['leaseMatches', 'renewalAnswered']),
              actions: ['applyRenewal', record('Active')],
            },
          },
        },
        Releasing: {
          entry: [...open('release'), record('Releasing')],
          on: {
            'provider.succeeded': [
              // An older attempt may still answer: the resource may yet appear, so wait for it.
              // (A lapsed authority parks it: it ends in ReconciliationRequired, not Released.)
              {
                guard: and([current('release'), 'othersAwaitResult']),
                actions: ['settleAttempt', 'confirmRelease', 'parkForAuthority'],
              },
              // An Unknown call may still land, and this release is no evidence about it (its lookup
              // did not find the operation's resource, and the provider cannot prove the call is
              // over): released what was found, but the lease is not Released; reconciliation
              // releases again until the evidence is there.
              {
                guard: and([current('release'), 'othersUnevidenced']),
                target: 'ReconciliationRequired',
                actions: [...releaseAnsweredUnsettled, 'parkForAuthority'],
              },
              // Every other attempt is answered by this result, but the authority it is committed
              // under lapsed: parked until a caller with current authority releases again.
              {
                guard: and([current('release'), 'authorityLapsed']),
                target: 'ReconciliationRequired',
                actions: releaseAnsweredParked,
              },
              // Every other attempt is answered by this result: an earlier release by its receipt,
              // a provision by the operation's resource found and released, or by the provider's
              // proof that the call can no longer take effect.
              {
                guard: current('release'),
                target: 'Released',
                actions: ['settleAttempt', resolveEvidenced, 'settleAllUnresolved'],
              },
              // The stale provision created something after all: release again.
              {
                guard: stale('provision'),
                target: 'Releasing',
                reenter: true,
                actions: ['settleAttempt', 'adoptResource', 'clearReleaseConfirmation'],
              },
              {
                guard: and([
                  stale('release'),
                  'releaseConfirmed',
                  not('othersUnresolved'),
                  or(['parked', 'authorityLapsed']),
                ]),
                target: 'ReconciliationRequired',
                actions: ['settleAttempt', 'parkForAuthority'],
              },
              {
                guard: and([stale('release'), 'releaseConfirmed', not('othersUnresolved')]),
                target: 'Released',
                actions: 'settleAttempt',
              },
              { guard: stale('release'), actions: 'settleAttempt' },
            ],
            'provider.failed': [
              {
                guard: current('release'),
                target: 'ReconciliationRequired',
                actions: ['settleAttempt', 'recordFailure', recoveringRelease],
              },
              {
                guard: and([staleAny, 'releaseConfirmed', not('othersUnresolved'), 'parked']),
                target: 'ReconciliationRequired',
                actions: 'settleAttempt',
              },
              {
                guard: and([staleAny, 'releaseConfirmed', not('othersUnresolved')]),
                target: 'Released',
                actions: 'settleAttempt',
              },
              { guard: staleAny, actions: 'settleAttempt' },
            ],
            'provider.superseded': [
              {
                guard: current('release'),
                target: 'ReconciliationRequired',
                actions: ['settleAttempt', recoveringRelease],
              },
              {
                guard: and([staleAny, 'releaseConfirmed', not('othersUnresolved'), 'parked']),
                target: 'ReconciliationRequired',
                actions: 'settleAttempt',
              },
              {
                guard: and([staleAny, 'releaseConfirmed', not('othersUnresolved')]),
                target: 'Released',
                actions: 'settleAttempt',
              },
              { guard: staleAny, actions: 'settleAttempt' },
            ],
            'provider.unknown': {
              guard: or([current('release'), stale('provision'), stale('release')]),
              target: 'ReconciliationRequired',
              actions: ['markUnknown', recoveringRelease],
            },
            // A second abandon re-fences and releases again: the way out of any doubt here.
            'sandbox.abandon': {
              guard: 'leaseMatches',
              target: 'Releasing',
              reenter: true,
              actions: 'beginRelease',
            },
          },
        },
        ReconciliationRequired: {
          entry: record('ReconciliationRequired'),
          on: {
            // A parked lease is not revived by reconciliation; a caller with current authority
            // releases it (environment.release below, or sandbox.abandon).
            'sandbox.reconcile': {
              guard: and(['leaseMatches', 'reconcileIdle', not('parked')]),
              actions: open('listOwned'),
            },
            'environment.release': {
              guard: and(['releaseAllowed', 'parked']),
              target: 'Releasing',
              actions: 'beginRelease',
            },
            'provider.succeeded': [
              {
                guard: and([
                  current('listOwned'),
                  recoveringProvision,
                  'foundOwnResource',
                  'authorityLapsed',
                ]),
                actions: [
                  resolveAll('Succeeded', 'found by exact listOwned'),
                  'settleAllUnresolved',
                  'adoptResource',
                  'parkForAuthority',
                  record('ReconciliationRequired'),
                ],
              },
              {
                guard: and([current('provision'), recoveringProvision, 'authorityLapsed']),
                actions: [
                  'settleAttempt',
                  'adoptResource',
                  'settleAllUnresolved',
                  'parkForAuthority',
                  record('ReconciliationRequired'),
                ],
              },
              {
                guard: and([current('listOwned'), recoveringProvision, 'foundOwnResource']),
                target: 'Active',
                actions: [
                  resolveAll('Succeeded', 'found by exact listOwned'),
                  'settleAllUnresolved',
                  'adoptResource',
                ],
              },
              // Not found. An empty list is no proof that the Unknown call had no effect: it stays
              // unresolved, and the retry under the same operation creates or adopts the one
              // deterministic resource, which settles it.
              {
                guard: and([current('listOwned'), recoveringProvision]),
                target: 'Provisioning',
                actions: ['settleAttempt', 'clearRecovering'],
              },
              {
                guard: and([current('listOwned'), 'foundOwnResource']),
                target: 'Releasing',
                actions: [
                  resolveAll('Superseded', 'still present by exact listOwned; release retried'),
                  'settleAllUnresolved',
                  'adoptResource',
                ],
              },
              // Not found: release again, so that a fenced release's exact lookup (its receipt)
              // settles what is unresolved; the empty list alone settles nothing.
              {
                guard: current('listOwned'),
                target: 'Releasing',
                actions: ['settleAttempt', 'clearRecovering'],
              },
              // The original attempt's own result arrived late: it is exact evidence.
              {
                guard: and([current('provision'), recoveringProvision]),
                target: 'Active',
                actions: ['settleAttempt', 'adoptResource', 'settleAllUnresolved'],
              },
              {
                guard: and([current('release'), 'othersUnevidenced']),
                actions: [...releaseAnsweredUnsettled, 'parkForAuthority', record('ReconciliationRequired')],
              },
              {
                guard: and([current('release'), 'authorityLapsed']),
                actions: [...releaseAnsweredParked, record('ReconciliationRequired')],
              },
              {
                guard: current('release'),
                target: 'Released',
                actions: ['settleAttempt', resolveEvidenced, 'settleAllUnresolved'],
              },
              { guard: stale('provision'), actions: ['settleAttempt', 'adoptResource'] },
            ],
            'provider.failed': [
              { guard: current('listOwned'), actions: 'settleAttempt' },
              {
                guard: or([current('provision'), stale('provision')]),
                actions: ['settleAttempt', 'recordFailure'],
              },
            ],
            'provider.unknown': [
              { guard: current('listOwned'), actions: 'settleAttempt' },
              // An attempt of the lease went past its deadline while the lease waits here: it is
              // Unknown now (no longer awaited as Pending), and stays unresolved.
              {
                guard: or([current('provision'), current('release'), staleAny]),
                actions: 'markUnknown',
              },
            ],
            'sandbox.abandon': { guard: 'leaseMatches', target: 'Releasing', actions: 'beginRelease' },
          },
        },
        Released: {
          entry: record('Released'),
          on: {
            'sandbox.provision': provisionNewLease,
          },
        },
        Failed: {
          entry: record('Failed'),
          on: {
            'sandbox.provision': provisionNewLease,
          },
        },
      },
    },
    cleanup: cleanupRegion,
    commands: commandsRegion,
    workspace: workspaceRegion,
  },
});

export type EnvironmentMachine = typeof environmentMachine;
