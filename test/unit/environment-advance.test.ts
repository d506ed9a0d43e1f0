// The lifecycle generation advance on the pure machine: from exactly the expected generation, once
// per operation key, only with no current lease; what the older generation authorized is stale.
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { environmentDefinition } from '../../actors/environment-definition.ts';
import { environmentMachine } from '../../machines/environment.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { activeLease } from '../support/active-lease.ts';
import {
  abandon,
  environmentInput,
  provision,
  release,
  type EnvironmentSnapshot,
} from '../support/environment-events.ts';

const advance = (expectedLifecycleGeneration: number, operationKey = 'resume:op-1'): EnvironmentEvent => ({
  type: 'environment.advance',
  operationKey,
  expectedLifecycleGeneration,
});
const send = (snapshot: EnvironmentSnapshot, event: EnvironmentEvent) =>
  transition(environmentMachine, snapshot, event)[0];

describe('environment.advance', () => {
  it('moves the lifecycle generation by one, once per key', () => {
    const [start] = initialTransition(environmentMachine, environmentInput);
    const advanced = send(start, advance(1));
    expect(advanced.context.lifecycleGeneration).toBe(2);
    expect(advanced.context.advances).toEqual({ 'resume:op-1': { fromGeneration: 1, toGeneration: 2 } });
    // A replay of the same key at the new generation changes nothing; a stale expectation neither.
    expect(send(advanced, advance(2))).toBe(advanced);
    expect(send(advanced, advance(1, 'resume:op-2'))).toBe(advanced);
    expect(send(advanced, advance(2, 'resume:op-2')).context.lifecycleGeneration).toBe(3);
  });

  it('is refused while a lease is current, and after the Environment was released', () => {
    const active = activeLease();
    expect(send(active, advance(1))).toBe(active);
    const releasing = send(active, abandon({ resourceGeneration: 1, providerFence: 1 }));
    expect(send(releasing, advance(1))).toBe(releasing);
    const [start] = initialTransition(environmentMachine, environmentInput);
    const released = send(start, release(1));
    expect(released.value).toMatchObject({ lifecycle: 'Released' });
    expect(send(released, advance(1))).toBe(released);
  });

  it('makes the next lease and release carry the new generation; the old one is stale', () => {
    const [start] = initialTransition(environmentMachine, environmentInput);
    const advanced = send(start, advance(1));
    expect(send(advanced, release(1))).toBe(advanced);
    const provisioning = send(advanced, provision('op-2'));
    expect(provisioning.context.sandbox.lease?.lifecycleGeneration).toBe(2);
  });

  it('gives a version 4 snapshot no advances', () => {
    const migrate = environmentDefinition.migrations[4];
    expect(migrate?.({ value: {}, context: { flushes: {} } })).toEqual({
      value: {},
      context: { flushes: {}, advances: {} },
    });
  });
});
