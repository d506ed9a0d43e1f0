// Scenarios of the Environment machine as a table: the events in order, then the state value, the
// lease rows and the provider effects declared along the way (`kind gN fM`: resource generation N,
// fencing generation M when an abandon moved it past 1).
import { describe, expect, it } from 'vitest';
import type { SandboxState } from '../../machines/environment-context.ts';
import type { LifecycleState } from '../../machines/environment-context.ts';
import type { EnvironmentEvent, ResourceSummary } from '../../machines/environment-events.ts';
import { lost, ownResource, provision, release } from '../support/environment-events.ts';
import { step, type ModelState } from '../support/environment-model.ts';
import {
  abandonLease,
  answer,
  effectLabel,
  observe,
  play,
  reconcileLease,
  refuse,
  type Step,
} from '../support/environment-scenario.ts';

interface Scenario {
  name: string;
  steps: Step[];
  lifecycle: LifecycleState;
  sandbox: SandboxState;
  /** Lease rows by resource generation, as the `record.lease` actions left them. */
  leases: Record<number, SandboxState>;
  effects: string[];
}

/** The latest release's success, carrying evidence about the lease's other attempts. */
const withEvidence =
  (evidence: { resources?: ResourceSummary[]; settledCalls?: string[] }) =>
  (run: ModelState): EnvironmentEvent => {
    const success = answer('release', 'succeeded')(run);
    if (success.type !== 'provider.succeeded') throw new Error('not a success');
    return { ...success, ...evidence };
  };

const failedAnswer = (run: ModelState) => {
  const failed = answer('provision', 'failed')(run);
  if (failed.type !== 'provider.failed') throw new Error('not a failure');
  return failed;
};

const scenarios: Scenario[] = [
  {
    name: 'release of an Environment without a lease completes at once',
    steps: [release(1)],
    lifecycle: 'Released',
    sandbox: 'NoLease',
    leases: {},
    effects: [],
  },
  {
    name: 'release naming another lifecycle generation is refused',
    steps: [refuse(release(2))],
    lifecycle: 'Registered',
    sandbox: 'NoLease',
    leases: {},
    effects: [],
  },
  {
    name: 'a provision after the Environment is released is refused',
    steps: [release(1), refuse(provision('op-1'))],
    lifecycle: 'Released',
    sandbox: 'NoLease',
    leases: {},
    effects: [],
  },
  {
    name: 'provision then success is Active',
    steps: [provision('op-1'), answer('provision', 'succeeded')],
    lifecycle: 'Registered',
    sandbox: 'Active',
    leases: { 1: 'Active' },
    effects: ['provision g1'],
  },
  {
    name: 'releasing while the provision attempt is unresolved is refused',
    steps: [provision('op-1'), refuse(release(1))],
    lifecycle: 'Registered',
    sandbox: 'Provisioning',
    leases: { 1: 'Provisioning' },
    effects: ['provision g1'],
  },
  {
    name: 'definitive provision failure is Failed and a new provision gets resource generation 2',
    steps: [provision('op-1'), answer('provision', 'failed'), provision('op-2')],
    lifecycle: 'Registered',
    sandbox: 'Provisioning',
    leases: { 1: 'Failed', 2: 'Provisioning' },
    effects: ['provision g1', 'provision g2'],
  },
  {
    name: 'timeout after apply → ReconciliationRequired; release is refused; reconcile finds it → Active; release → Released',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      refuse(release(1)),
      reconcileLease,
      answer('listOwned', 'succeeded'),
      release(1),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'listOwned g1', 'release g1'],
  },
  {
    name: 'the timed-out attempt’s own late success during reconciliation is exact evidence → Active',
    steps: [provision('op-1'), answer('provision', 'unknown'), answer('provision', 'succeeded')],
    lifecycle: 'Registered',
    sandbox: 'Active',
    leases: { 1: 'Active' },
    effects: ['provision g1'],
  },
  {
    name: 'reconcile that finds nothing re-provisions under the same operation',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
    ],
    lifecycle: 'Registered',
    sandbox: 'Provisioning',
    leases: { 1: 'Provisioning' },
    effects: ['provision g1', 'listOwned g1', 'provision g1'],
  },
  {
    name: 'reconcile that finds only another operation’s pod does not adopt it and re-provisions',
    steps: [
      provision('op-1'),
      answer('provision', 'superseded'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [ownResource('op-other')] }),
    ],
    lifecycle: 'Registered',
    sandbox: 'Provisioning',
    leases: { 1: 'Provisioning' },
    effects: ['provision g1', 'listOwned g1', 'provision g1'],
  },
  {
    name: 'a second reconcile while one is in flight is refused; a failed listOwned allows another',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      reconcileLease,
      refuse(reconcileLease),
      answer('listOwned', 'failed'),
      reconcileLease,
    ],
    lifecycle: 'Registered',
    sandbox: 'ReconciliationRequired',
    leases: { 1: 'ReconciliationRequired' },
    effects: ['provision g1', 'listOwned g1', 'listOwned g1'],
  },
  {
    name: 'abandon with a stale provider fence is ignored',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      refuse({ type: 'sandbox.abandon', resourceGeneration: 1, providerFence: 2, idempotencyKey: 'a' }),
    ],
    lifecycle: 'Registered',
    sandbox: 'Active',
    leases: { 1: 'Active' },
    effects: ['provision g1'],
  },
  {
    name: 'abandon during provisioning fences the in-flight attempt: its late success triggers another release',
    steps: [
      provision('op-1'),
      abandonLease,
      answer('release', 'succeeded'),
      answer('provision', 'succeeded'),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Registered',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2', 'release g1 f2'],
  },
  {
    name: 'abandon during provisioning: the fenced attempt’s late failure completes the confirmed release',
    steps: [provision('op-1'), abandonLease, answer('release', 'succeeded'), answer('provision', 'failed')],
    lifecycle: 'Registered',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2'],
  },
  {
    name: 'a superseded attempt after abandon is settled',
    steps: [
      provision('op-1'),
      abandonLease,
      answer('provision', 'superseded'),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Registered',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2'],
  },
  {
    name: 'a superseded attempt after abandon and the release receipt completes the release',
    steps: [
      provision('op-1'),
      abandonLease,
      answer('release', 'succeeded'),
      answer('provision', 'superseded'),
    ],
    lifecycle: 'Registered',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2'],
  },
  {
    name: 'a started pod keeps the lease Active',
    steps: [provision('op-1'), answer('provision', 'succeeded'), observe(null)],
    lifecycle: 'Registered',
    sandbox: 'Active',
    leases: { 1: 'Active' },
    effects: ['provision g1'],
  },
  {
    name: 'finished pod retires placement but the Environment stays Registered',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      observe('PodSucceeded'),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Registered',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1'],
  },
  {
    name: 'release of an Environment with an Active lease retires the lease first (202 path: lifecycle Releasing until the release result)',
    steps: [provision('op-1'), answer('provision', 'succeeded'), release(1)],
    lifecycle: 'Releasing',
    sandbox: 'Releasing',
    leases: { 1: 'Releasing' },
    effects: ['provision g1', 'release g1'],
  },
  {
    name: 'release of an Environment with an Active lease completes with the release receipt',
    steps: [provision('op-1'), answer('provision', 'succeeded'), release(1), answer('release', 'succeeded')],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1'],
  },
  {
    name: 'a failed release needs reconciliation; an empty listOwned releases again, and that receipt completes it',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      release(1),
      answer('release', 'failed'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1', 'listOwned g1', 'release g1'],
  },
  {
    name: 'a sandbox that disappeared while Active is lost: released (its receipt proves it gone), then provisioned anew',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      (run) => lost(fencesOf(run)),
      answer('release', 'succeeded'),
      provision('op-2'),
    ],
    lifecycle: 'Registered',
    sandbox: 'Provisioning',
    leases: { 1: 'Released', 2: 'Provisioning' },
    effects: ['provision g1', 'release g1', 'provision g2'],
  },
  {
    name: 'an Unknown release is not settled by an empty listOwned: release stays blocked until a receipt',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      release(1),
      answer('release', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
    ],
    lifecycle: 'Releasing',
    sandbox: 'Releasing',
    leases: { 1: 'Releasing' },
    effects: ['provision g1', 'release g1', 'listOwned g1', 'release g1'],
  },
  {
    // Used to settle the Unknown provision and answer Released (E14): an empty lookup proves
    // nothing about a create that may still land.
    name: 'an abandoned Unknown provision is not settled by a release whose lookup found nothing',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      abandonLease,
      answer('release', 'succeeded'),
      refuse(release(1)),
    ],
    lifecycle: 'Registered',
    sandbox: 'ReconciliationRequired',
    leases: { 1: 'ReconciliationRequired' },
    effects: ['provision g1', 'release g1 f2'],
  },
  {
    name: "an abandoned Unknown provision is settled by a release whose lookup found the operation's resource",
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      abandonLease,
      withEvidence({ resources: [ownResource('op-1')] }),
      release(1),
    ],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2'],
  },
  {
    name: 'an abandoned Unknown provision is settled once the provider proves the call can no longer land',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      abandonLease,
      answer('release', 'succeeded'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
      withEvidence({ settledCalls: ['op-1.provision.1'] }),
      release(1),
    ],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1 f2', 'listOwned g1 f2', 'release g1 f2'],
  },
  {
    name: 'a provision retry refused before any call leaves the earlier Unknown call unresolved',
    steps: [
      provision('op-1'),
      answer('provision', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
      (run) => ({ ...failedAnswer(run), madeNoCall: true as const }),
      refuse(release(1)),
    ],
    lifecycle: 'Registered',
    sandbox: 'ReconciliationRequired',
    leases: { 1: 'ReconciliationRequired' },
    effects: ['provision g1', 'listOwned g1', 'provision g1'],
  },
  {
    name: 'a timed-out release whose pod is still listed is retried',
    steps: [
      provision('op-1'),
      answer('provision', 'succeeded'),
      release(1),
      answer('release', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded'),
      answer('release', 'succeeded'),
    ],
    lifecycle: 'Released',
    sandbox: 'Released',
    leases: { 1: 'Released' },
    effects: ['provision g1', 'release g1', 'listOwned g1', 'release g1'],
  },
];

const fencesOf = (run: ModelState) => {
  const lease = run.snapshot.context.sandbox.lease;
  if (lease === null) throw new Error('no lease');
  return { resourceGeneration: lease.resourceGeneration, providerFence: lease.providerFence };
};

describe('Environment scenarios', () => {
  it.each(scenarios)('$name', ({ steps, lifecycle, sandbox, leases, effects }) => {
    const run = play(steps);
    expect(run.snapshot.value).toEqual({
      lifecycle,
      sandbox,
      cleanup: 'Clean',
      commands: 'Open',
      workspace: 'Steady',
    });
    expect(run.leaseRows).toEqual(leases);
    expect(run.effects.map(effectLabel)).toEqual(effects);
  });

  it('re-provisions under the same operation with a new attempt id', () => {
    const run = play([
      provision('op-1'),
      answer('provision', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
    ]);
    expect(run.effects.map((e) => [e.operationId, e.attemptId])).toEqual([
      ['op-1', 'op-1.provision.1'],
      ['op-1', 'op-1.listOwned.2'],
      ['op-1', 'op-1.provision.3'],
    ]);
    // The empty list settles nothing: the Unknown attempt still blocks release.
    expect(run.last?.actions.some((a) => a.type === 'record.attemptsResolved')).toBe(false);
    expect(Object.keys(run.snapshot.context.sandbox.unresolved).sort()).toEqual([
      'op-1.provision.1',
      'op-1.provision.3',
    ]);
    expect(step(run, release(1)).snapshot).toBe(run.snapshot);
    // The retry's result is the one deterministic resource: evidence for the earlier attempt too.
    const done = play([
      provision('op-1'),
      answer('provision', 'unknown'),
      reconcileLease,
      answer('listOwned', 'succeeded', { resources: [] }),
      answer('provision', 'succeeded'),
    ]);
    expect(done.snapshot.value).toEqual({
      lifecycle: 'Registered',
      sandbox: 'Active',
      cleanup: 'Clean',
      commands: 'Open',
      workspace: 'Steady',
    });
    expect(done.snapshot.context.sandbox.unresolved).toEqual({});
    expect(done.last?.actions.find((a) => a.type === 'record.attemptsResolved')?.params).toEqual([
      {
        attemptId: 'op-1.provision.1',
        state: 'Succeeded',
        resolution:
          'the same deterministic resource was created or adopted by a retry under the same operation',
      },
    ]);
  });
});
