// Which checks a provider's capabilities call for, and readiness for a lease whose provider has no
// AgentHost, no Pod network and no Workspace volume: the network and Workspace conditions are True
// with reason NotApplicable (naming the missing capability), but the configured phase still has to
// be observed, from the provider's own exact describe (started alone is not ready); every other
// provider's answers are unchanged.
import { describe, expect, it } from 'vitest';
import { providerApplicability, recordedApplicability } from '../../actors/sandbox/provider-applicability.ts';
import {
  conditionSchema,
  readinessConditions,
  type ReadinessCondition,
  type ReadinessEvidence,
} from '../../actors/sandbox/readiness.ts';
import { agentSandboxIdentity } from '../../providers/agent-sandbox/identity.ts';
import type { ProviderIdentity } from '../../providers/provider.ts';
import { simulatedIdentity } from '../../providers/simulated/identity.ts';
import type { LeaseRow } from '../../store/leases.ts';

const hostIdentity: ProviderIdentity = {
  providerId: 'sandbox-host',
  adapterVersion: '1.0.0',
  optionsSchemaVersion: 1,
  optionsRevision: '1',
  hostingPattern: 'enrolled-host',
  capabilities: ['host-signed-results'],
};

const workspace = {
  volumeId: 'vol_1',
  resourceGeneration: 1,
  dataGeneration: 1,
  mountPath: '/workspace',
  readOnly: false,
};

function leaseFor(identity: ProviderIdentity): LeaseRow {
  const at = new Date('2026-01-01T00:00:00Z');
  return {
    environmentId: 'env_1',
    resourceGeneration: 1,
    operationId: 'op_1',
    lifecycleGeneration: 1,
    providerFence: 1,
    currentFencingGeneration: 1,
    state: 'Active',
    idempotencyKey: 'prov-1',
    runSelection: {},
    providerIdentity: { ...identity },
    providerOptions: {},
    recoveryRequest: {
      operationId: 'op_1',
      resourceGeneration: 1,
      providerFence: 1,
      provision: { workspace, networkPolicyGeneration: 1 },
    },
    requestedBy: 'alice',
    expiresAt: null,
    expiredAt: null,
    workspace,
    networkPolicyGeneration: 1,
    resource: { resourceId: 'res_1', operationId: 'op_1', phase: 'started', placement: {} },
    releaseReceipt: null,
    failure: null,
    buildTestProfile: null,
    revision: 3,
    createdAt: at,
    updatedAt: at,
    observedAt: null,
  };
}

/** A sandbox in `phase`, with nothing asked of the Host, no generation requested and no volume row. */
function evidenceFor(
  identity: ProviderIdentity,
  overrides: Partial<ReadinessEvidence> = {},
  phase = 'started',
) {
  const lease = leaseFor(identity);
  return {
    first: lease,
    last: lease,
    now: new Date('2026-01-01T00:01:00Z'),
    observation: { exact: true, phase, finished: null, error: null },
    replacedPod: null,
    host: null,
    network: { requested: undefined, verified: false },
    volume: null,
    flushedTo: null,
    ...overrides,
  } satisfies ReadinessEvidence;
}

const byType = (conditions: ReadinessCondition[]) => Object.fromEntries(conditions.map((c) => [c.type, c]));

describe('providerApplicability', () => {
  it('the simulated and Agent Sandbox providers are held to every check', () => {
    const all = { workspaceStorage: true, networkPolicy: true, agentHost: true };
    expect(providerApplicability(simulatedIdentity('1'))).toEqual(all);
    expect(providerApplicability(agentSandboxIdentity('1'))).toEqual(all);
  });

  it('a provider with neither pvc-attachment nor vm-isolation is held to none of them', () => {
    expect(providerApplicability(hostIdentity)).toEqual({
      workspaceStorage: false,
      networkPolicy: false,
      agentHost: false,
    });
  });

  it('each check follows its own capability, in any order', () => {
    expect(providerApplicability({ capabilities: ['pvc-attachment'] })).toEqual({
      workspaceStorage: true,
      networkPolicy: false,
      agentHost: false,
    });
    expect(providerApplicability({ capabilities: ['vm-isolation', 'host-signed-results'] })).toEqual({
      workspaceStorage: false,
      networkPolicy: true,
      agentHost: true,
    });
  });

  it('a recorded identity Sandlot did not write is held to every check', () => {
    const all = { workspaceStorage: true, networkPolicy: true, agentHost: true };
    expect(recordedApplicability({}).applies).toEqual(all);
    expect(recordedApplicability({ providerId: 'x', capabilities: 'vm-isolation' }).applies).toEqual(all);
    expect(recordedApplicability({ providerId: 'x', capabilities: [1] }).applies).toEqual(all);
    expect(recordedApplicability({ capabilities: [] }).applies).toEqual(all);
    expect(recordedApplicability({ ...hostIdentity })).toEqual({
      providerId: 'sandbox-host',
      applies: { workspaceStorage: false, networkPolicy: false, agentHost: false },
    });
  });
});

describe('readinessConditions for a provider without the capabilities', () => {
  it('a sandbox-host lease observed only started is not ready: configured is never inferred from started', () => {
    const conditions = readinessConditions(evidenceFor(hostIdentity));
    expect(conditions.filter((c) => c.status !== 'True').map((c) => [c.type, c.status, c.reason])).toEqual([
      ['HostConfigured', 'False', 'NotConfigured'],
    ]);
    const c = byType(conditions);
    expect(c['SandboxObserved']).toMatchObject({ status: 'True', reason: 'Started' });
    expect(c['HostConfigured']?.message).toContain('sandbox-host provider runs no AgentHost');
    expect(c['HostConfigured']?.message).toContain('its guest has not reported its configuration');
  });

  it('a sandbox-host lease its describe reports configured is ready; the network and Workspace are NotApplicable', () => {
    const conditions = readinessConditions(evidenceFor(hostIdentity, {}, 'configured'));
    for (const condition of conditions) expect(conditionSchema.parse(condition)).toEqual(condition);
    expect(conditions.filter((c) => c.status !== 'True')).toEqual([]);
    const c = byType(conditions);
    expect(c['SandboxObserved']).toMatchObject({ status: 'True', reason: 'Started' });
    expect(c['HostConfigured']).toMatchObject({ status: 'True', reason: 'Configured' });
    expect(c['HostConfigured']?.message).toContain('sandbox-host provider runs no AgentHost');
    expect(c['HostConfigured']?.message).toContain('no vm-isolation capability');
    expect(c['HostConfigured']?.message).toContain('describe reports the sandbox configured');
    expect(c['NetworkPolicyVerified']).toMatchObject({ status: 'True', reason: 'NotApplicable' });
    expect(c['NetworkPolicyVerified']?.message).toContain('no vm-isolation capability');
    expect(c['WorkspaceAttached']).toMatchObject({
      status: 'True',
      reason: 'NotApplicable',
      message: 'the sandbox-host provider attaches no Workspace volume (no pvc-attachment capability)',
      observedGeneration: 1,
    });
  });

  it('NotApplicable holds whatever generation is asked; configured follows the describe whatever the Host said', () => {
    const c = byType(
      readinessConditions(
        evidenceFor(
          hostIdentity,
          { network: { requested: 9, verified: 'unavailable' }, host: { error: 'unreachable' } },
          'configured',
        ),
      ),
    );
    expect(c['NetworkPolicyVerified']?.reason).toBe('NotApplicable');
    expect(c['HostConfigured']).toMatchObject({ status: 'True', reason: 'Configured' });
  });

  it('without an exact fresh describe of the running sandbox, configured is not known', () => {
    const cases: { name: string; observation: ReadinessEvidence['observation'] }[] = [
      { name: 'no observation', observation: null },
      {
        name: 'a failed describe',
        observation: {
          exact: false,
          phase: null,
          finished: null,
          error: { code: 'host-unanswered', message: 'no answer' },
        },
      },
      { name: 'an absent sandbox', observation: { exact: false, phase: null, finished: null, error: null } },
      {
        name: 'a finished sandbox',
        observation: { exact: true, phase: 'configured', finished: 'PodSucceeded', error: null },
      },
    ];
    for (const { name, observation } of cases) {
      const c = byType(readinessConditions(evidenceFor(hostIdentity, { observation })));
      expect(c['HostConfigured'], name).toMatchObject({ status: 'Unknown', reason: 'NotObserved' });
    }
  });

  it('the checks that do apply still decide: not started, expired or moved is not ready', () => {
    const notStarted = byType(
      readinessConditions(
        evidenceFor(hostIdentity, {
          observation: { exact: true, phase: 'scheduled', finished: null, error: null },
        }),
      ),
    );
    expect(notStarted['SandboxObserved']).toMatchObject({ status: 'False', reason: 'NotStarted' });

    const lease = { ...leaseFor(hostIdentity), expiresAt: new Date('2026-01-01T00:00:30Z') };
    const expired = byType(readinessConditions(evidenceFor(hostIdentity, { first: lease, last: lease })));
    expect(expired['LeaseUnexpired']).toMatchObject({ status: 'False', reason: 'Expired' });

    const moved = byType(readinessConditions(evidenceFor(hostIdentity, { last: null })));
    expect(moved['LeaseCurrent']).toMatchObject({ status: 'False', reason: 'LeaseMoved' });
  });

  it('the same evidence for a provider with the capabilities answers as before', () => {
    const c = byType(readinessConditions(evidenceFor(simulatedIdentity('1'))));
    expect(c['HostConfigured']).toMatchObject({ status: 'Unknown', reason: 'NotAsked' });
    expect(c['NetworkPolicyVerified']).toMatchObject({ status: 'False', reason: 'NotRequested' });
    expect(c['WorkspaceAttached']).toMatchObject({ status: 'False', reason: 'VolumeMissing' });
  });

  it('a provider with vm-isolation is configured only by its AgentHost, whatever its describe says', () => {
    const c = byType(readinessConditions(evidenceFor(simulatedIdentity('1'), {}, 'configured')));
    expect(c['SandboxObserved']).toMatchObject({ status: 'True', reason: 'Started' });
    expect(c['HostConfigured']).toMatchObject({ status: 'Unknown', reason: 'NotAsked' });
  });

  it('a provider with only pvc-attachment is still held to its Workspace attachment', () => {
    const c = byType(readinessConditions(evidenceFor({ ...hostIdentity, capabilities: ['pvc-attachment'] })));
    expect(c['WorkspaceAttached']).toMatchObject({ status: 'False', reason: 'VolumeMissing' });
    expect(c['HostConfigured']?.reason).toBe('NotConfigured');
  });
});
