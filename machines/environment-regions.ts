// Three regions of the Environment machine, each a state config of the machine's setup
// (environment-setup.ts): `cleanup` (late resources), `commands` (BuildTest operations) and
// `workspace` (trusted Workspace flushes).
import { and, not, or, stateIn } from 'xstate';
import type { EnvironmentContext } from './environment-context.ts';
import { ownerFenceOf } from './environment-context.ts';
import { cleanupEffectFor, sweepEffectFor, sweepOpenedOf } from './environment-effects.ts';
import type { EnvironmentEvent } from './environment-events.ts';
import * as c from './environment-cleanup.ts';
import * as cmd from './environment-commands.ts';
import { environmentSetup } from './environment-setup.ts';
import * as ws from './environment-workspace.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };
/** The commands region's attempt the transition just opened (after its context update). */
const commandEffect = {
  type: 'effect.provider' as const,
  params: ({ context, event }: Args) => cmd.commandEffectOf(context, event),
};
const recordCommand = {
  type: 'record.command' as const,
  params: ({ context, event }: Args) => cmd.commandRecordOf(context, event),
};

// Late resources: valid resources of ours that no current lease owns. Each is released on its
// own, one claim at a time, under the Environment's current owner fence; the terminal lease it
// came from is never changed. Any open item blocks Environment release.
export const cleanupRegion = environmentSetup.createStateConfig({
  initial: 'Clean',
  on: {
    'cleanup.recorded': {
      guard: 'newCleanup',
      target: '.Pending',
      // The records are taken before addCleanup: they are the items new to this transition.
      actions: [
        {
          type: 'record.cleanup',
          params: ({ context, event }) => c.cleanupRecordsOf(context, event),
        },
        'addCleanup',
      ],
    },
    // An owner listing of a terminal lease (never the current one while it is current).
    'cleanup.sweep': {
      guard: or([stateIn({ sandbox: 'Released' }), stateIn({ sandbox: 'Failed' }), 'sweepsOtherLease']),
      actions: [
        // Every opened attempt counts (and a transition that changes nothing is not recorded).
        'countAttempt',
        { type: 'effect.provider', params: ({ event }) => sweepEffectFor(event) },
        { type: 'record.sweepOpened', params: ({ event }) => sweepOpenedOf(event) },
      ],
    },
  },
  states: {
    Clean: {},
    Pending: {
      always: { guard: 'noOpenCleanup', target: 'Clean' },
      on: {
        'cleanup.claim': {
          guard: 'cleanupClaimable',
          actions: [
            'claimCleanup',
            {
              type: 'record.cleanupClaimed',
              params: ({ context, event }) => c.claimRecordOf(context, event),
            },
            {
              type: 'effect.provider',
              params: ({ context, event }) => {
                const { cleanupId, item } = c.claimedItem(context, event);
                return cleanupEffectFor(
                  cleanupId,
                  item,
                  item.attemptId ?? '',
                  item.claimToken ?? '',
                  item.authorizingFence ?? ownerFenceOf(context),
                );
              },
            },
          ],
        },
        // The receipt is saved only while its claim is the current one and the owner fence that
        // authorized it is still current (compare-and-swap); a newer claim supersedes it.
        'cleanup.released': {
          guard: and(['cleanupClaimCurrent', 'cleanupFenceCurrent']),
          actions: [
            {
              type: 'record.cleanupReleased',
              params: ({ context, event }) => c.releasedRecordOf(context, event),
            },
            'dropCleanup',
          ],
        },
        'cleanup.failed': {
          guard: 'cleanupClaimCurrent',
          actions: [
            {
              type: 'record.cleanupFailed',
              params: ({ event }) => c.failedRecordOf(event),
            },
            'unclaimCleanup',
          ],
        },
      },
    },
  },
});

// BuildTest operations on the current lease (docs/build-test.md). One state for the region: what
// each operation may do next is its own item's state, decided by the guards below; every step is
// a provider attempt opened by the transition that decides it.
export const commandsRegion = environmentSetup.createStateConfig({
  initial: 'Open',
  states: {
    Open: {
      on: {
        'command.reserve': {
          guard: and([
            stateIn({ sandbox: 'Active' }),
            'commandOnCurrentLease',
            'newCommand',
            not('workspaceHeldByFlush'),
          ]),
          actions: [
            { type: 'record.commandReserved', params: ({ event }) => cmd.reservationOf(event) },
            'reserveCommand',
            commandEffect,
          ],
        },
        'command.stepped': [
          // Collection is opened by the same transition that saw the command exit 0 (never on a
          // Workspace a flush holds: the step is recorded, and nothing is opened).
          {
            guard: and([
              'commandStepCurrent',
              ({ event }) => cmd.advanced(event),
              not('workspaceHeldByFlush'),
            ]),
            actions: ['stepCommand', recordCommand, commandEffect],
          },
          { guard: 'commandStepCurrent', actions: ['stepCommand', recordCommand] },
        ],
        // A command or collector step is not reopened on a Workspace a flush holds; cleanup may be.
        'command.reconcile': {
          guard: and(['commandReconcilable', or(['reconcilesCleanup', not('workspaceHeldByFlush')])]),
          actions: ['reopenCommand', recordCommand, commandEffect],
        },
        'command.acknowledged': {
          guard: 'commandAcknowledgeable',
          actions: ['acknowledgeCommand', recordCommand, commandEffect],
        },
      },
    },
  },
});

const recordFlush = {
  type: 'record.flush' as const,
  params: ({ context, event }: Args) => ws.flushRecordOf(context, event),
};
/** A delivery is journaled, and its outcome saved, only on the flush's own lease, still Active. */
const onFlushLease = and([stateIn({ sandbox: 'Active' }), 'flushOpen', 'flushLeaseCurrent']);

// Trusted Workspace flushes (docs/suspend-resume.md). Steady: no flush open; Flushing: one is
// reserved or uncertain, and no other may be reserved; Flushed: the current (or last) lease's flush
// was verified, and the volume's data generation moved with it. A refusal returns to Steady having
// changed nothing.
export const workspaceRegion = environmentSetup.createStateConfig({
  initial: 'Steady',
  on: {
    'workspace.flushReserve': {
      // Never while a BuildTest command may still write the Workspace.
      guard: and([
        stateIn({ sandbox: 'Active' }),
        'flushOnCurrentLease',
        'newFlush',
        not('anyFlushOpen'),
        not('anyCommandRunning'),
      ]),
      target: '.Flushing',
      actions: [
        { type: 'record.flushReserved', params: ({ event }) => ws.flushReservationOf(event) },
        'reserveFlush',
      ],
    },
  },
  states: {
    Steady: {},
    Flushing: {
      on: {
        'workspace.flushRedeliver': { guard: onFlushLease, actions: ['redeliverFlush', recordFlush] },
        'workspace.flushed': [
          {
            guard: and([onFlushLease, 'flushVerified']),
            target: 'Flushed',
            actions: ['settleFlush', recordFlush],
          },
          {
            guard: and(['flushOpen', 'flushRefused']),
            target: 'Steady',
            actions: ['settleFlush', recordFlush],
          },
          // Uncertain: kept with its evidence, still open for the same flush, wherever the lease is.
          { guard: and(['flushOpen', 'flushUncertain']), actions: ['settleFlush', recordFlush] },
        ],
      },
    },
    // Speaks for the lease that was flushed: once a newer lease is reserved, Steady again.
    Flushed: { always: { guard: 'flushedLeaseReplaced', target: 'Steady' } },
  },
});
