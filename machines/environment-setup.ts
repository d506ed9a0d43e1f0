// The Environment machine's setup: its types, and every guard and action by name. The machine
// (environment.ts) and its regions (environment-regions.ts) are built from it, so a region can live
// in a file of its own and still name the guards and actions it uses.
import { assign, setup } from 'xstate';
import type { EnvironmentContext } from './environment-context.ts';
import type {
  AttemptResolution,
  CleanupClaimRecord,
  CleanupFailedRecord,
  CleanupRecord,
  CleanupReleasedRecord,
  LeaseRecord,
  LeaseReservation,
  ProviderEffect,
  SweepOpenedRecord,
} from './environment-effects.ts';
import type { EnvironmentEvent, EnvironmentInput } from './environment-events.ts';
import * as c from './environment-cleanup.ts';
import * as cmd from './environment-commands.ts';
import * as g from './environment-guards.ts';
import * as u from './environment-updates.ts';
import * as ws from './environment-workspace.ts';

export const environmentSetup = setup({
  types: {
    context: {} as EnvironmentContext,
    events: {} as EnvironmentEvent,
    input: {} as EnvironmentInput,
  },
  guards: {
    releaseAllowed: g.releaseAllowed,
    advanceAllowed: g.advanceAllowed,
    noUnresolved: g.noUnresolved,
    leaseMatches: g.leaseMatches,
    currentAttempt: g.currentAttempt,
    staleAttempt: g.staleAttempt,
    othersUnresolved: g.othersUnresolved,
    othersAwaitResult: g.othersAwaitResult,
    releaseConfirmed: g.releaseConfirmed,
    recovering: g.recovering,
    foundOwnResource: g.foundOwnResource,
    observedFinished: g.observedFinished,
    reconcileIdle: g.reconcileIdle,
    authorityLapsed: g.authorityLapsed,
    expiryDue: g.expiryDue,
    renewAllowed: g.renewAllowed,
    renewalAnswered: g.renewalAnswered,
    parked: g.parked,
    noOpenCleanup: c.noOpenCleanup,
    newCleanup: c.newCleanup,
    sweepsOtherLease: c.otherLease,
    cleanupClaimable: c.claimable,
    cleanupClaimCurrent: c.claimCurrent,
    cleanupFenceCurrent: c.fenceCurrent,
    commandOnCurrentLease: cmd.onCurrentLease,
    newCommand: cmd.newCommand,
    commandStepCurrent: cmd.stepCurrent,
    commandReconcilable: cmd.reconcilable,
    commandAcknowledgeable: cmd.acknowledgeable,
    flushOnCurrentLease: ws.flushOnCurrentLease,
    newFlush: ws.newFlush,
    anyFlushOpen: ws.anyFlushOpen,
    flushOpen: ws.flushOpen,
    flushLeaseCurrent: ws.flushLeaseCurrent,
    flushVerified: ws.flushVerified,
    flushUncertain: ws.flushUncertain,
    flushRefused: ws.flushRefused,
  },
  actions: {
    recordReleaseRequest: assign({
      release: ({ event }) =>
        event.type === 'environment.release' ? { idempotencyKey: event.idempotencyKey } : null,
    }),
    advanceLifecycle: assign(u.advanceLifecycle),
    reserveLease: assign({ sandbox: u.reserveLease }),
    openAttempt: assign({
      sandbox: (args, params: { kind: u.LeaseEffectKind }) => u.openAttempt(args, params.kind),
    }),
    settleAttempt: assign({ sandbox: u.settleAttempt }),
    markUnknown: assign({ sandbox: u.markUnknown }),
    adoptResource: assign({ sandbox: u.adoptResource }),
    recordObservation: assign({ sandbox: u.recordObservation }),
    beginRelease: assign({ sandbox: u.beginRelease }),
    clearRecovering: assign({ sandbox: u.clearRecovering }),
    setRecovering: assign({
      sandbox: (args, params: { what: 'provision' | 'release' }) => u.setRecovering(args, params.what),
    }),
    confirmRelease: assign({ sandbox: u.confirmRelease }),
    clearReleaseConfirmation: assign({ sandbox: u.clearReleaseConfirmation }),
    recordFailure: assign({ sandbox: u.recordFailure }),
    markLost: assign({ sandbox: u.markLost }),
    parkForAuthority: assign({ sandbox: u.parkForAuthority }),
    expireLease: assign({ sandbox: u.expireLease }),
    beginRenewal: assign({ sandbox: u.beginRenewal }),
    applyRenewal: assign({ sandbox: u.applyRenewal }),
    settleAllUnresolved: assign({ sandbox: u.settleAllUnresolved }),
    addCleanup: assign({ cleanups: c.addCleanup }),
    countAttempt: assign({ sandbox: u.countAttempt }),
    claimCleanup: assign({ cleanups: c.claimCleanup }),
    dropCleanup: assign({ cleanups: c.dropCleanup }),
    unclaimCleanup: assign({ cleanups: c.unclaimCleanup }),
    reserveCommand: assign({ commands: cmd.reserveCommand }),
    stepCommand: assign({ commands: cmd.stepCommand }),
    reopenCommand: assign({ commands: cmd.reopenCommand }),
    acknowledgeCommand: assign({ commands: cmd.acknowledgeCommand }),
    reserveFlush: assign({ flushes: ws.reserveFlush }),
    redeliverFlush: assign({ flushes: ws.redeliverFlush }),
    settleFlush: assign({ flushes: ws.settleFlush }),
    // Data for the runtime; executing them here does nothing.
    'effect.provider': (_, _params: ProviderEffect) => undefined,
    'record.leaseReserved': (_, _params: LeaseReservation) => undefined,
    'record.lease': (_, _params: LeaseRecord) => undefined,
    'record.attemptsResolved': (_, _params: AttemptResolution[]) => undefined,
    'record.cleanup': (_, _params: CleanupRecord[]) => undefined,
    'record.sweepOpened': (_, _params: SweepOpenedRecord) => undefined,
    'record.cleanupClaimed': (_, _params: CleanupClaimRecord) => undefined,
    'record.cleanupReleased': (_, _params: CleanupReleasedRecord) => undefined,
    'record.cleanupFailed': (_, _params: CleanupFailedRecord) => undefined,
    'record.commandReserved': (_, _params: cmd.CommandReservedRecord) => undefined,
    'record.command': (_, _params: cmd.CommandStateRecord) => undefined,
    'record.flushReserved': (_, _params: ws.FlushReservedRecord) => undefined,
    'record.flush': (_, _params: ws.FlushRecord) => undefined,
  },
});
