// The pure Environment machine with its first lease Active (op-1): where the commands and workspace
// region tests start.
import { expect } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { environmentMachine } from '../../machines/environment.ts';
import type { ProviderEffect } from '../../machines/environment-effects.ts';
import { environmentInput, provision, result, type EnvironmentSnapshot } from './environment-events.ts';

type Actions = readonly { type: string; params?: unknown }[];

/** The provider effects among a transition's actions. */
export const effects = (actions: Actions): ProviderEffect[] =>
  actions.filter((a) => a.type === 'effect.provider').map((a) => a.params as ProviderEffect);

export function activeLease(): EnvironmentSnapshot {
  const [start] = initialTransition(environmentMachine, environmentInput);
  const [provisioning, actions] = transition(environmentMachine, start, provision('op-1'));
  const [attempt] = effects(actions);
  if (attempt === undefined) throw new Error('no provision attempt');
  const [active] = transition(environmentMachine, provisioning, result(attempt, 'succeeded'));
  expect(active.value).toMatchObject({ sandbox: 'Active' });
  return active;
}
