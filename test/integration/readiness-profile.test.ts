// Readiness and the stored runtime profile mapping, through the real HTTP app on PostgreSQL: a Host
// that says it was configured through a runtime profile is ready only while that profile's stored
// mapping is the current lease's, at the endpoint its placement records now (with its selection and
// source configuration unchanged). The profile of an earlier lease, or one never resolved, leaves
// HostConfigured False with its reason, and the lease not ready for dispatch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { ReadinessCondition } from '../../actors/sandbox/readiness.ts';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

const SERVICE = 'sbx-ready.sandboxes.svc.cluster.local';
const configuration: AgentHostConfiguration = {
  receiver: { configurePath: '/runtime/v1/configure', audience: 'agenthost-receiver' },
  profiles: { codex: { runtime: 'codex', model: { id: 'model-a' }, profileId: 'placeholder' } },
};
const placement = {
  podIP: '10.0.3.18',
  podUid: 'pod-ready',
  service: 'sbx-ready',
  serviceDns: SERVICE,
  endpoint: `https://${SERVICE}:8443`,
};

interface Inspection {
  readyForDispatch: boolean;
  phase: string | null;
  conditions: ReadinessCondition[];
}

describe('readiness rejects an old runtime profile', () => {
  let handle: BackendHandle;
  let h: Harness;
  let host: EmbeddedAgentHost;

  beforeAll(async () => {
    handle = await openBackend('postgres');
    host = new EmbeddedAgentHost({ db: handle.db, autoConfigure: false });
    h = await buildHarness(handle.db, {
      workers: {},
      agentHost: host,
      agentHostProfiles: configuration,
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 }, placementFor: () => placement },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  /** Provisions under `key` and waits for the lease Active and started; answers its operation ID. */
  async function provision(s: Scenario, key: string): Promise<string> {
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, key),
    });
    expect(res.status).toBe(202);
    const { resourceGeneration } = await json<{ resourceGeneration: number }>(res);
    const lease = await waitForLease(
      h,
      s,
      (l) =>
        l['state'] === 'Active' && l['phase'] === 'started' && l['resourceGeneration'] === resourceGeneration,
    );
    return String(lease['operationId']);
  }

  async function resolve(s: Scenario, run: string): Promise<string> {
    const token = await h.token('acme', 'alice', { runBinding: { projectId: 'checkout', runId: run } });
    const res = await h.request('POST', `${s.base}/runtime-bootstrap/profiles/codex/resolve`, { token });
    expect(res.status).toBe(200);
    return (await json<{ profileId: string }>(res)).profileId;
  }

  const inspect = async (s: Scenario) =>
    json<Inspection>(
      await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
    );
  const hostCondition = (body: Inspection) => body.conditions.find((c) => c.type === 'HostConfigured');

  it('is ready with the profile resolved for the current lease', async () => {
    const run = 'run-ready-profile';
    const s = await setupScenario(h, { run });
    const operationId = await provision(s, 'prov-1');
    host.configure(operationId, { profileId: await resolve(s, run) });
    const body = await inspect(s);
    expect(hostCondition(body)).toMatchObject({ status: 'True', reason: 'Configured' });
    expect(body.readyForDispatch).toBe(true);
  });

  it("is not ready when the Host was configured through an earlier lease's profile", async () => {
    const run = 'run-old-profile';
    const s = await setupScenario(h, { run });
    await provision(s, 'prov-1');
    const old = await resolve(s, run);
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const operationId = await provision(s, 'prov-2');

    host.configure(operationId, { profileId: old });
    const stale = await inspect(s);
    expect(stale.readyForDispatch).toBe(false);
    expect(stale.phase).not.toBe('configured');
    expect(hostCondition(stale)).toMatchObject({ status: 'False', reason: 'ProfileStale' });
    expect(hostCondition(stale)?.message).toContain('endpoint');

    // The same Host configured through the profile resolved for this lease is ready.
    const fresh = await resolve(s, run);
    expect(fresh).not.toBe(old);
    host.configure(operationId, { profileId: fresh });
    expect((await inspect(s)).readyForDispatch).toBe(true);
  });

  it('is not ready when the Host names a profile never resolved for this Environment', async () => {
    const run = 'run-unresolved-profile';
    const s = await setupScenario(h, { run });
    const operationId = await provision(s, 'prov-1');
    host.configure(operationId, { profileId: `rp_${'b'.repeat(52)}` });
    const body = await inspect(s);
    expect(body.readyForDispatch).toBe(false);
    expect(hostCondition(body)).toMatchObject({ status: 'False', reason: 'ProfileUnresolved' });
  });
});
