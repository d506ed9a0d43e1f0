import { describe, expect, it } from 'vitest';
import { getNextSnapshot, initialTransition, transition } from 'xstate';
import { environmentMachine } from '../../machines/environment.ts';
import { environmentEventSchema } from '../../machines/environment-events.ts';

const input = { environmentId: 'env_x', tenantId: 't', projectId: 'p', runId: 'r' };

describe('environment machine', () => {
  it('starts Registered at lifecycle generation 1 with no effects', () => {
    const [snapshot, actions] = initialTransition(environmentMachine, input);
    expect(snapshot.value).toEqual({
      lifecycle: 'Registered',
      sandbox: 'NoLease',
      cleanup: 'Clean',
      commands: 'Open',
      workspace: 'Steady',
    });
    expect(snapshot.context.lifecycleGeneration).toBe(1);
    expect(actions.filter((a) => a.type.startsWith('effect.'))).toEqual([]);
  });

  it('releases the current generation to Released and records the key', () => {
    const [start] = initialTransition(environmentMachine, input);
    const [next] = transition(environmentMachine, start, {
      type: 'environment.release',
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'r1',
    });
    expect(next.value).toEqual({
      lifecycle: 'Released',
      sandbox: 'NoLease',
      cleanup: 'Clean',
      commands: 'Open',
      workspace: 'Steady',
    });
    expect(next.context.release).toEqual({ idempotencyKey: 'r1' });
  });

  it('ignores a release of another generation', () => {
    const [start] = initialTransition(environmentMachine, input);
    const next = getNextSnapshot(environmentMachine, start, {
      type: 'environment.release',
      expectedLifecycleGeneration: 2,
      idempotencyKey: 'r1',
    });
    expect(next).toBe(start);
  });

  it('ignores a second release once Released', () => {
    const [start] = initialTransition(environmentMachine, input);
    const release = {
      type: 'environment.release',
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'a',
    } as const;
    const [released] = transition(environmentMachine, start, release);
    const [again] = transition(environmentMachine, released, { ...release, idempotencyKey: 'b' });
    expect(again).toBe(released);
  });

  it.each([
    [{ type: 'environment.release', expectedLifecycleGeneration: 0, idempotencyKey: 'a' }],
    [{ type: 'environment.release', expectedLifecycleGeneration: 1 }],
    [
      {
        type: 'environment.release',
        expectedLifecycleGeneration: 1,
        idempotencyKey: 'a',
        target: 'Registered',
      },
    ],
    [{ type: 'environment.explode' }],
  ])('refuses the malformed event %j at the schema', (event) => {
    expect(environmentEventSchema.safeParse(event).success).toBe(false);
  });
});
