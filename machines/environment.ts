// The Environment machine: pure (no I/O, clock or randomness). Parallel regions so that the
// `sandbox` and `cleanup` regions slot in beside `lifecycle` without reshaping it. Effects are
// named actions prefixed `effect.`; the actor runtime turns each into an outbox row.
import { assign, setup } from 'xstate';
import type { EnvironmentContext, EnvironmentEvent, EnvironmentInput } from './environment-events.ts';

export const environmentMachine = setup({
  types: {
    context: {} as EnvironmentContext,
    events: {} as EnvironmentEvent,
    input: {} as EnvironmentInput,
  },
  guards: {
    // The runtime rejects a stale fence before the machine runs; the guard keeps the machine
    // correct on its own (a pure test can never release the wrong generation).
    releaseGenerationMatches: ({ context, event }) =>
      event.type === 'environment.release' &&
      event.expectedLifecycleGeneration === context.lifecycleGeneration,
    // Release completes only once placement is retired and no provider attempt is unresolved.
    // With no sandbox region yet there is nothing to wait for.
    placementRetired: () => true,
  },
  actions: {
    recordReleaseRequest: assign({
      release: ({ event }) =>
        event.type === 'environment.release' ? { idempotencyKey: event.idempotencyKey } : null,
    }),
  },
}).createMachine({
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
  }),
  states: {
    lifecycle: {
      initial: 'Registered',
      states: {
        Registered: {
          on: {
            'environment.release': {
              guard: 'releaseGenerationMatches',
              target: 'Releasing',
              actions: 'recordReleaseRequest',
            },
          },
        },
        Releasing: {
          always: { guard: 'placementRetired', target: 'Released' },
        },
        // Not `final`: later regions (late cleanup) may still take events after release.
        Released: {},
      },
    },
  },
});

export type EnvironmentMachine = typeof environmentMachine;
export type LifecycleState = 'Registered' | 'Releasing' | 'Released';
export const lifecycleStates: readonly LifecycleState[] = ['Registered', 'Releasing', 'Released'];
