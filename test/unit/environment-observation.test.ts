// What an exact describe records in the lease's placement (machines/environment-updates.ts). The
// mapping keeps the first Pod it saw (a Pod with another UID later is evidence, never recorded), and
// a lease whose provision read back a pending Pod (placement `{}`) still learns where its AgentHost
// answers: the Pod's IP and its Service's DNS name, which agentHostEndpointOf reads.
import { describe, expect, it } from 'vitest';
import { environmentEventSchema, type EnvironmentEvent } from '../../machines/environment-events.ts';
import { observedPlacement } from '../../machines/environment-updates.ts';
import { ownResource, provision } from '../support/environment-events.ts';
import { answer, play, type Step } from '../support/environment-scenario.ts';
import type { ModelState } from '../support/environment-model.ts';

const POD = { pod: 'sbx-1', podUid: 'uid-1', podIP: '10.0.0.7', node: 'node-a' };
const SERVICE = { service: 'sbx-1', serviceDns: 'sbx-1.ns.svc.cluster.local' };

describe('observedPlacement', () => {
  const cases: {
    name: string;
    recorded: Record<string, string>;
    podUid: string | undefined;
    observed?: Record<string, string>;
    expected: Record<string, string>;
  }[] = [
    {
      name: '1. the first Pod seen after a pending read-back is recorded with all its placement',
      recorded: {},
      podUid: 'uid-1',
      observed: { ...POD, ...SERVICE },
      expected: { ...POD, ...SERVICE },
    },
    {
      name: '2. the first Pod seen without a reported placement records its UID alone (older receipts)',
      recorded: { node: 'node-a' },
      podUid: 'uid-1',
      expected: { node: 'node-a', podUid: 'uid-1' },
    },
    {
      name: '3. the mapped Pod fills only what the placement still lacks',
      recorded: { pod: 'sbx-1', podUid: 'uid-1', node: 'node-a' },
      podUid: 'uid-1',
      observed: { ...POD, ...SERVICE, node: 'node-b' },
      expected: { ...POD, ...SERVICE },
    },
    {
      name: '4. another Pod is never recorded, none of its fields either',
      recorded: { pod: 'sbx-1', podUid: 'uid-1' },
      podUid: 'uid-2',
      observed: { ...POD, podUid: 'uid-2', podIP: '10.0.0.9', ...SERVICE },
      expected: { pod: 'sbx-1', podUid: 'uid-1' },
    },
    {
      name: '5. an observation without a Pod changes nothing',
      recorded: { node: 'node-a' },
      podUid: undefined,
      observed: { podIP: '10.0.0.9' },
      expected: { node: 'node-a' },
    },
    {
      name: '6. the observed UID is the one recorded, whatever the reported placement says',
      recorded: {},
      podUid: 'uid-1',
      observed: { ...POD, podUid: 'uid-9' },
      expected: POD,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(observedPlacement(c.recorded, c.podUid, c.observed)).toEqual(c.expected);
    });
  }
});

describe('sandbox.observed on an Active lease', () => {
  /** An observation of the current lease's Pod, started, with what the provider reported of it. */
  const sawPod =
    (podUid: string, placement?: Record<string, string>) =>
    (run: ModelState): EnvironmentEvent => {
      const lease = run.snapshot.context.sandbox.lease!;
      return {
        type: 'sandbox.observed',
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        phase: 'started',
        finished: null,
        podUid,
        ...(placement === undefined ? {} : { placement }),
      };
    };
  const pendingReadBack = answer('provision', 'succeeded', {});
  const placementAfter = (steps: Step[]) => play(steps).snapshot.context.sandbox.lease?.resource?.placement;
  // The provision's read-back saw the Pod pending: nothing of it is placed yet.
  const pending = (run: ModelState): EnvironmentEvent => {
    const event = pendingReadBack(run);
    if (event.type !== 'provider.succeeded') throw new Error('expected a success');
    return { ...event, resource: { ...ownResource('op-1'), phase: 'pending', placement: {} } };
  };

  it('records where the AgentHost answers once the Pod is observed after a pending read-back', () => {
    const run = play([provision('op-1'), pending, sawPod('uid-1', { ...POD, ...SERVICE })]);
    expect(environmentEventSchema.safeParse(run.last?.event).success).toBe(true);
    expect(run.snapshot.value).toMatchObject({ sandbox: 'Active' });
    expect(run.snapshot.context.sandbox.lease?.resource).toMatchObject({
      phase: 'started',
      placement: { ...POD, ...SERVICE },
    });
  });

  it('fills the mapped Pod from a later observation, and takes nothing from a replacing Pod', () => {
    expect(
      placementAfter([
        provision('op-1'),
        pending,
        sawPod('uid-1'),
        sawPod('uid-2', { ...POD, podUid: 'uid-2', podIP: '10.0.0.9', ...SERVICE }),
      ]),
    ).toEqual({ podUid: 'uid-1' });
    expect(
      placementAfter([provision('op-1'), pending, sawPod('uid-1'), sawPod('uid-1', { ...POD, ...SERVICE })]),
    ).toEqual({ ...POD, ...SERVICE });
  });
});

describe('sandbox.observed with the configured phase', () => {
  const observed =
    (phase: string) =>
    (run: ModelState): EnvironmentEvent => {
      const lease = run.snapshot.context.sandbox.lease!;
      return environmentEventSchema.parse({
        type: 'sandbox.observed',
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        phase,
        finished: null,
      });
    };

  it('a provider that reports its guest configured moves the lease from started to configured', () => {
    const run = play([provision('op-1'), answer('provision', 'succeeded', {}), observed('configured')]);
    expect(environmentEventSchema.safeParse(run.last?.event).success).toBe(true);
    expect(run.snapshot.value).toMatchObject({ sandbox: 'Active' });
    expect(run.snapshot.context.sandbox.lease?.resource?.phase).toBe('configured');
  });

  it('a phase that is none of the five is not an event', () => {
    const event = { type: 'sandbox.observed', resourceGeneration: 1, providerFence: 1, finished: null };
    expect(environmentEventSchema.safeParse({ ...event, phase: 'configured' }).success).toBe(true);
    expect(environmentEventSchema.safeParse({ ...event, phase: 'ready' }).success).toBe(false);
  });
});
