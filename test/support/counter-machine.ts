// A small machine for exercising the actor runtime itself: events that can be sent any number of
// times, one effect, and a state rename to test snapshot migrations.
import { assign, setup, type AnyMachineSnapshot } from 'xstate';
import type { ActorDefinition } from '../../actors/definition.ts';

export type CounterEvent =
  | { type: 'add'; amount: number; id: string }
  | { type: 'flip'; id: string }
  | { type: 'bump'; expectedGeneration: number };

interface CounterContext {
  count: number;
  generation: number;
  seen: string[];
}

export function counterMachine(stateNames: { a: string; b: string } = { a: 'Even', b: 'Odd' }) {
  return setup({
    types: { context: {} as CounterContext, events: {} as CounterEvent },
    actions: {
      'effect.announce': (_, _params: { count: number }) => undefined,
      record: assign({ seen: ({ context, event }) => [...context.seen, 'id' in event ? event.id : '?'] }),
    },
  }).createMachine({
    id: 'counter',
    type: 'parallel',
    context: { count: 0, generation: 1, seen: [] },
    states: {
      lifecycle: {
        initial: stateNames.a,
        states: {
          [stateNames.a]: { on: { flip: { target: stateNames.b, actions: 'record' } } },
          [stateNames.b]: { on: { flip: { target: stateNames.a, actions: 'record' } } },
        },
        on: {
          add: {
            actions: [
              assign({
                count: ({ context, event }) => context.count + event.amount,
                seen: ({ context, event }) => [...context.seen, event.id],
              }),
              { type: 'effect.announce', params: ({ context }) => ({ count: context.count }) },
            ],
          },
          bump: { actions: assign({ generation: ({ context }) => context.generation + 1 }) },
        },
      },
    },
  });
}

export function counterDefinition(
  overrides: Partial<ActorDefinition<CounterEvent>> = {},
): ActorDefinition<CounterEvent> {
  return {
    machine: counterMachine(),
    version: 1,
    migrations: {},
    project(snapshot: AnyMachineSnapshot) {
      const value = snapshot.value as { lifecycle: string };
      return {
        lifecycleState: value.lifecycle,
        lifecycleGeneration: (snapshot.context as CounterContext).generation,
      };
    },
    fences: (event) => (event.type === 'bump' ? { lifecycleGeneration: event.expectedGeneration } : {}),
    ...overrides,
  };
}

export const counterIdentity = (id: string) => ({
  environmentId: id,
  tenantId: 't',
  projectId: 'p',
  runId: 'r',
  idempotencyKey: id,
  runSelectionHash: 'h',
});
