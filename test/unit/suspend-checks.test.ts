// The pure suspend judges (actors/suspend/suspend-checks.ts), table-driven, Core's refusals through
// a hand-written RuntimeCore, and the problems the refusals become.
import { describe, expect, it } from 'vitest';
import type { CoreActor, RuntimeCore } from '../../actors/ports.ts';
import type { RuntimeOperation, RuntimeRegistration } from '../../actors/runtime-core/runtime-operation.ts';
import { SuspendRefusedError, SuspendUnavailableError } from '../../actors/suspend/errors.ts';
import {
  askCoreForSuspend,
  attachedVolumeProblem,
  placementProblem,
  refuseOn,
  sessionProblem,
  transitionProblem,
} from '../../actors/suspend/suspend-checks.ts';
import { CoreUnavailableError } from '../../actors/build-test/core-errors.ts';
import { problemBody } from '../../http/problems.ts';
import type { LeaseRow } from '../../store/leases.ts';
import type { VolumeRow } from '../../store/workspaces.ts';

const environmentId = `env_${'a'.repeat(32)}`;
const ref = { tenantId: 'acme', projectId: 'checkout', runId: 'run-42', stepId: 'agent_1', environmentId };
const operation: RuntimeOperation = {
  ref,
  operationId: 'op-suspend-1',
  kind: 'suspend',
  state: 'reserved',
  stateRevision: 1,
  placement: { leaseOperationId: 'op_lease', resourceGeneration: 2, providerFence: 3 },
  workspace: { volumeId: 'vol_1', transitionRevision: 4 },
  requireReleaseCurrent: true,
};
const mount = {
  volumeId: 'vol_1',
  resourceGeneration: 1,
  dataGeneration: 1,
  mountPath: '/workspace',
  readOnly: false,
};
const at = new Date('2026-01-01T00:00:00Z');
const lease: LeaseRow = {
  environmentId,
  resourceGeneration: 2,
  operationId: 'op_lease',
  lifecycleGeneration: 1,
  providerFence: 3,
  currentFencingGeneration: 1,
  state: 'Active',
  idempotencyKey: 'k',
  runSelection: {},
  providerIdentity: { providerId: 'simulated' },
  providerOptions: {},
  recoveryRequest: {
    operationId: 'op_lease',
    resourceGeneration: 2,
    providerFence: 3,
    provision: { workspace: mount, networkPolicyGeneration: 1 },
  },
  requestedBy: 'alice',
  expiresAt: null,
  expiredAt: null,
  workspace: mount,
  networkPolicyGeneration: 1,
  resource: { resourceId: 'res-1', operationId: 'op_lease', phase: 'Running', placement: {} },
  releaseReceipt: null,
  failure: null,
  buildTestProfile: null,
  revision: 5,
  createdAt: at,
  updatedAt: at,
  observedAt: null,
};
const volume: VolumeRow = {
  volumeId: 'vol_1',
  environmentId,
  idempotencyKey: 'ws',
  resourceGeneration: 1,
  dataGeneration: 1,
  state: 'Attached',
  attachedLease: 2,
  revision: 4,
};
const registration: RuntimeRegistration = {
  ref,
  registrationId: 'reg-1',
  profileId: 'profile-1',
  sessionId: 'session-1',
  generation: 1,
};
const proof = { registrationId: 'reg-1', sessionId: 'session-1', generation: 1 };

describe('placementProblem', () => {
  it('accepts the current Active lease the operation names', () => {
    expect(placementProblem(operation, lease, at)).toBeNull();
  });

  it.each<[string, LeaseRow | null, RegExp]>([
    ['no lease', null, /has no current lease/],
    ['another Environment', { ...lease, environmentId: `env_${'b'.repeat(32)}` }, /another Environment/],
    ['Releasing', { ...lease, state: 'Releasing' }, /is Releasing, not Active/],
    ['expiry fenced', { ...lease, expiredAt: at }, /expired/],
    ['expiry passed', { ...lease, expiresAt: new Date(at.getTime() - 1) }, /expired/],
    ['no resource', { ...lease, resource: null }, /no provider resource/],
    ['another lease operation', { ...lease, operationId: 'op_other' }, /current lease is op_other/],
    ['another resource generation', { ...lease, resourceGeneration: 3 }, /resource generation 3/],
    ['another provider fence', { ...lease, providerFence: 4 }, /provider fence 4/],
  ])('refuses %s', (_, held, reason) => {
    expect(placementProblem(operation, held, at)).toMatch(reason);
  });
});

describe('attachedVolumeProblem', () => {
  it('accepts the operation volume Attached to exactly the lease', () => {
    expect(attachedVolumeProblem(operation, lease, volume)).toBeNull();
  });

  it('accepts a data generation a flush advanced since the lease was provisioned', () => {
    expect(attachedVolumeProblem(operation, lease, { ...volume, dataGeneration: 2 })).toBeNull();
  });

  it.each<[string, LeaseRow | null, VolumeRow | null, RegExp]>([
    ['no volume', lease, null, /does not exist/],
    ['another volume', lease, { ...volume, volumeId: 'vol_2' }, /is not volume vol_1/],
    [
      'another Environment',
      lease,
      { ...volume, environmentId: `env_${'b'.repeat(32)}` },
      /is not Environment/,
    ],
    ['no lease', null, volume, /no current lease/],
    [
      'Available',
      lease,
      { ...volume, state: 'Available', attachedLease: null },
      /is Available, not Attached/,
    ],
    [
      'attached to another lease',
      lease,
      { ...volume, attachedLease: 1 },
      /Attached to lease generation 1, not/,
    ],
    ['no recorded request', { ...lease, recoveryRequest: {} }, volume, /no validated recorded provision/],
    [
      'a recorded request for another volume',
      {
        ...lease,
        recoveryRequest: {
          ...lease.recoveryRequest,
          provision: { workspace: { ...mount, volumeId: 'vol_2' }, networkPolicyGeneration: 1 },
        },
      },
      volume,
      /mounts volume vol_2/,
    ],
    ['another volume resource generation', lease, { ...volume, resourceGeneration: 2 }, /not vol_1 at 2/],
  ])('refuses %s', (_, held, row, reason) => {
    expect(attachedVolumeProblem(operation, held, row)).toMatch(reason);
  });
});

describe('transitionProblem', () => {
  it('accepts the revision the operation carries and refuses any other', () => {
    expect(transitionProblem(operation, volume)).toBeNull();
    expect(transitionProblem(operation, { ...volume, revision: 5 })).toMatch(
      /transition revision 5; .* carries 4/,
    );
    expect(transitionProblem(operation, { ...volume, revision: 3 })).toMatch(/transition revision 3/);
  });
});

describe('sessionProblem', () => {
  it('accepts exactly the current registration', () => {
    expect(sessionProblem(registration, proof)).toBeNull();
  });

  it.each([
    ['another registration', { ...proof, registrationId: 'reg-2' }],
    ['another session', { ...proof, sessionId: 'session-2' }],
    ['another generation', { ...proof, generation: 2 }],
  ])('refuses %s', (_, offered) => {
    expect(sessionProblem(registration, offered)).toMatch(
      /Core's current registration is reg-1 generation 1/,
    );
  });
});

describe('askCoreForSuspend', () => {
  const actor: CoreActor = {
    tenantId: 'acme',
    subject: 'core',
    bearer: 'x',
    expiresAt: new Date(Date.now() + 60_000),
  };
  const signal = new AbortController().signal;
  const coreWith = (held: RuntimeOperation | null, reg: RuntimeRegistration | null): RuntimeCore => ({
    currentRuntimeOperation: () => Promise.resolve(held),
    currentRuntimeRegistration: () => Promise.resolve(reg),
    confirmSavedOperation: () => Promise.reject(new Error('not asked')),
  });
  const expected = { operationId: 'op-suspend-1', states: ['reserved'] as const };
  const refusal = async (core: RuntimeCore) => {
    const error = await askCoreForSuspend(core, actor, ref, expected, signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SuspendRefusedError);
    return (error as SuspendRefusedError).code;
  };

  it("answers Core's operation and registration", async () => {
    await expect(
      askCoreForSuspend(coreWith(operation, registration), actor, ref, expected, signal),
    ).resolves.toEqual({
      operation,
      registration,
    });
  });

  it('refuses no operation, a resume, another operation, a wrong state and no registration', async () => {
    expect(await refusal(coreWith(null, registration))).toBe('suspend-operation-not-current');
    expect(await refusal(coreWith({ ...operation, kind: 'resume' }, registration))).toBe(
      'suspend-operation-not-current',
    );
    expect(await refusal(coreWith({ ...operation, operationId: 'op-2' }, registration))).toBe(
      'suspend-operation-not-current',
    );
    expect(await refusal(coreWith({ ...operation, state: 'fenced', stateRevision: 2 }, registration))).toBe(
      'suspend-operation-state',
    );
    expect(await refusal(coreWith(operation, null))).toBe('runtime-registration-missing');
  });

  it("passes Core's own failures through unchanged", async () => {
    const down = new CoreUnavailableError('unreachable', 'connection refused');
    const core: RuntimeCore = {
      ...coreWith(operation, registration),
      currentRuntimeOperation: () => Promise.reject(down),
    };
    await expect(askCoreForSuspend(core, actor, ref, expected, signal)).rejects.toBe(down);
  });
});

describe('the problems', () => {
  it('a refusal is a 409 with its code as type and extension; no Core is a 503', () => {
    expect(() => refuseOn('workspace-transition-stale', 'moved')).toThrow(SuspendRefusedError);
    expect(() => refuseOn('workspace-transition-stale', null)).not.toThrow();
    expect(problemBody(new SuspendRefusedError('suspend-operation-changed', 'changed'))).toEqual({
      type: 'urn:sandlot:problem:suspend-operation-changed',
      title: 'Suspend refused',
      status: 409,
      detail: 'changed',
      code: 'suspend-operation-changed',
    });
    expect(problemBody(new SuspendUnavailableError())).toMatchObject({
      type: 'urn:sandlot:problem:runtime-core-unavailable',
      status: 503,
      code: 'runtime-core-unavailable',
    });
  });
});
