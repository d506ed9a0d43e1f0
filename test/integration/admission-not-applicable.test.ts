// A provider that advertises neither pvc-attachment nor vm-isolation (the simulated provider under
// a sandbox-host identity): admission checks the Workspace record but reads back no storage and
// verifies no network policy; readiness needs the configured phase from its own describe (started
// alone is NotConfigured; the stand-in reports configured once the test says its guest did), with
// the Workspace and network conditions NotApplicable and neither the Host nor the verifier asked;
// the lease goes Active and is released.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { AgentHostReadiness, AgentHostTarget, NetworkPolicyVerifier } from '../../actors/ports.ts';
import { verifyWorkspace } from '../../actors/sandbox/admission.ts';
import type { ReadinessCondition } from '../../actors/sandbox/readiness.ts';
import type { SandboxProvider } from '../../providers/provider.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import { TableNetworkPolicies } from '../../store/network-policies.ts';
import { readVolume } from '../../store/workspaces.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, waitForLease, waitForLifecycle } from '../support/sandbox-flow.ts';
import { problemOf, provisionWith, setupCustomScenario, slug } from '../support/sandbox-scenarios.ts';

/**
 * Every call goes to `inner`; only the identity says sandbox-host, without the two capabilities,
 * and a describe reports a started sandbox `configured` once its operation is in `configured` (what
 * the sandbox-host provider does once the host-signed describe carries its guest's report).
 */
function asSandboxHost(inner: SandboxProvider, configured: ReadonlySet<string>): SandboxProvider {
  return {
    identity: {
      ...inner.identity,
      providerId: 'sandbox-host',
      hostingPattern: 'enrolled-host',
      capabilities: ['host-signed-results'],
    },
    optionsSnapshot: () => inner.optionsSnapshot(),
    provision: (request, options) => inner.provision(request, options),
    describe: async (ref, options) => {
      const result = await inner.describe(ref, options);
      if (!result.present || result.resource.phase !== 'started') return result;
      if (!configured.has(ref.owner.operationId)) return result;
      return { present: true, resource: { ...result.resource, phase: 'configured' } };
    },
    listOwned: (query, options) => inner.listOwned(query, options),
    renew: (request, options) => inner.renew(request, options),
    release: (request, options) => inner.release(request, options),
    callSettled: (call, listedAt) => inner.callSettled(call, listedAt),
  };
}

/** An AgentHost that never configures by itself, counting every readiness question. */
class CountingHost extends EmbeddedAgentHost {
  asked = 0;
  override readiness(target: AgentHostTarget, signal: AbortSignal): Promise<AgentHostReadiness> {
    this.asked++;
    return super.readiness(target, signal);
  }
}

interface Inspection {
  readyForDispatch: boolean;
  phase: string | null;
  conditions: ReadinessCondition[];
  networkPolicy: { generation: number | null; verified: boolean };
}

describe('a provider without pvc-attachment and vm-isolation', () => {
  let handle: BackendHandle;
  let h: Harness;
  let inner: SimulatedProvider;
  let host: CountingHost;
  let verifications = 0;
  const configuredGuests = new Set<string>();

  beforeAll(async () => {
    handle = await openBackend('postgres');
    inner = new SimulatedProvider({ db: handle.db, optionsRevision: '1' });
    host = new CountingHost({ db: handle.db, autoConfigure: false });
    const table = new TableNetworkPolicies(handle.db);
    const networkPolicies: NetworkPolicyVerifier = {
      verify: (tenantId, projectId, generation) => {
        verifications++;
        return table.verify(tenantId, projectId, generation);
      },
    };
    h = await buildHarness(handle.db, {
      workers: {},
      sandboxProvider: asSandboxHost(inner, configuredGuests),
      networkPolicies,
      agentHost: host,
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  it('is admitted without the storage readback or the network policy check; the record still counts', async () => {
    const s = await setupCustomScenario(h, { project: 'na-admit', run: 'run-admit' });
    // Storage that would refuse: its PVC and PV are gone, so the readback cannot pass.
    await h.db.query('DELETE FROM embedded_workspace_storage WHERE volume_id = $1', [s.volume.volumeId]);
    const env = { environmentId: s.environmentId, tenantId: 'acme', projectId: 'na-admit' };
    const lease = { providerOptions: h.provider.optionsSnapshot() };
    await expect(verifyWorkspace(h.db, env, s.volume, lease)).rejects.toMatchObject({ status: 409 });

    // The Workspace record is still checked: a generation that is not the volume's is refused.
    const stale = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionWith({ ...s.volume, dataGeneration: s.volume.dataGeneration + 1 }, 'prov-stale'),
    });
    expect(stale.status).toBe(409);
    expect(slug(await problemOf(stale))).toBe('workspace-unavailable');

    // Generation 7 was never written: a provider with vm-isolation would be refused it.
    const admitted = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionWith(s.volume, 'prov-1', 7),
    });
    expect(admitted.status).toBe(202);
    expect(await json(admitted)).toMatchObject({ state: 'Provisioning', resourceGeneration: 1 });
  });

  it('goes Active, is not ready at started, is ready once its describe reports configured, and is released', async () => {
    const s = await setupCustomScenario(h, { project: 'na-flow', run: 'run-flow' });
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    const operationId = String((await json(provisioned))['operationId']);
    await waitForLease(h, s, (l) => l['state'] === 'Active' && l['phase'] === 'started');

    const verifiedBefore = verifications;
    const inspect = async () =>
      json<Inspection>(await h.request('GET', `${s.base}/sandbox`, { token: s.token }));
    // Started is not configured: without an AgentHost only the provider's describe can say it.
    const started = await inspect();
    expect(started.readyForDispatch).toBe(false);
    expect(started.phase).toBe('started');
    expect(started.conditions.find((c) => c.type === 'HostConfigured')).toMatchObject({
      status: 'False',
      reason: 'NotConfigured',
    });

    configuredGuests.add(operationId);
    const inspected = await inspect();
    expect(inspected.readyForDispatch).toBe(true);
    expect(inspected.phase).toBe('configured');
    expect(inspected.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['LeaseCurrent', 'True', 'Active'],
      ['LeaseUnexpired', 'True', 'Unexpired'],
      ['SandboxObserved', 'True', 'Started'],
      ['HostConfigured', 'True', 'Configured'],
      ['NetworkPolicyVerified', 'True', 'NotApplicable'],
      ['WorkspaceAttached', 'True', 'NotApplicable'],
    ]);
    // The machine recorded the observed phase on the lease.
    await waitForLease(h, s, (l) => l['phase'] === 'configured');
    expect(inspected.conditions.find((c) => c.type === 'WorkspaceAttached')?.message).toBe(
      'the sandbox-host provider attaches no Workspace volume (no pvc-attachment capability)',
    );
    // Asked with a generation, it is still not verified (nothing claims it), and still ready.
    const withGeneration = await json<Inspection>(
      await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
    );
    expect(withGeneration.readyForDispatch).toBe(true);
    expect(withGeneration.networkPolicy).toEqual({ generation: 1, verified: false });
    expect(host.asked).toBe(0);
    expect(verifications).toBe(verifiedBefore);

    const release = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
    });
    expect(release.status).toBe(202);
    await waitForLifecycle(h, s, 'Released');
    const final = await waitForLease(h, s, (l) => l['state'] === 'Released');
    expect(final['current']).toBe(false);
    expect(await inner.countResources({ operationId })).toBe(0);
    expect((await readVolume(h.db, s.volume.volumeId))?.state).toBe('Available');
    expect(host.asked).toBe(0);
  });
});
