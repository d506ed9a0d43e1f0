// Resume bootstrap and the stored runtime profile mapping, through the real HTTP app on PostgreSQL:
// Core's registration names the profile its Runtime was registered with, and bootstrap accepts it
// only while its stored mapping is the restored lease's, at the endpoint that lease's placement
// records now. A profile resolved for the suspended source (its Pod and Service are gone), a
// derived ID nobody resolved, or a plain source profile ID where the resolver exists is refused
// before any attempt is issued. Each lease's placement names its own Pod and Service here.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import { readAttempts } from '../../store/resume-bootstrap-attempts.ts';
import type { Harness } from '../support/harness.ts';
import { coreStartsRuntime, preparedAndVerified, suspend, type Suspended } from '../support/resume-flow.ts';
import { activeSandbox, openSuspendBackend, type SuspendBackend } from '../support/suspend-flow.ts';

const configuration: AgentHostConfiguration = {
  receiver: { configurePath: '/runtime/v1/configure', audience: 'agenthost-receiver' },
  profiles: { codex: { runtime: 'codex', model: { id: 'model-a' }, profileId: 'placeholder' } },
};

/** Every sandbox its own Pod and Service, named after its resource. */
function placementFor(resourceId: string): Record<string, string> {
  const name = `sbx-${createHash('sha256').update(resourceId).digest('hex').slice(0, 12)}`;
  const serviceDns = `${name}.sandboxes.svc.cluster.local`;
  return {
    podIP: '10.0.3.17',
    podUid: `pod-${name}`,
    service: name,
    serviceDns,
    endpoint: `https://${serviceDns}:8443`,
  };
}

let backend: SuspendBackend;
let h: Harness;
let host: EmbeddedAgentHost;
let runs = 0;

beforeAll(async () => {
  backend = await openSuspendBackend({
    agentHostProfiles: configuration,
    provider: { phaseDelaysMs: { imageReady: 10, started: 30 }, placementFor },
  });
  ({ h, host } = backend);
}, 120_000);
afterAll(() => backend.close());

interface Problem {
  type: string;
  detail?: string;
}

/** Resolves the `codex` source profile for the Environment's current sandbox; answers its ID. */
async function resolve(s: Suspended['sandbox']): Promise<string> {
  const token = await h.token('acme', 'alice', { runBinding: { projectId: s.project, runId: s.run } });
  const res = await h.request('POST', `${s.s.base}/runtime-bootstrap/profiles/codex/resolve`, { token });
  if (res.status !== 200) throw new Error(`resolve: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { profileId: string }).profileId;
}

/** A sandbox with a profile resolved for it, suspended, then prepared and verified on a new lease. */
async function resumed(): Promise<{ s: Suspended; sourceProfile: string; restored: unknown }> {
  const run = `run-boot-profile-${++runs}`;
  const sandbox = await activeSandbox(h, run, `project-${run}`);
  const sourceProfile = await resolve(sandbox);
  const s = await suspend(h, host, sandbox);
  const restored = await preparedAndVerified(h, s);
  return { s, sourceProfile, restored };
}

const bootstrap = (s: Suspended, body: Record<string, unknown>) =>
  h.request('POST', '/internal/runtime/resume/bootstrap', { token: s.sandbox.s.token, body });

describe('resume bootstrap and the stored profile mapping', () => {
  it('refuses a registration whose profile was resolved for the source Pod and Service: no attempt is issued', async () => {
    const { s, sourceProfile, restored } = await resumed();
    const body = await coreStartsRuntime(h, s, restored as never, 2, sourceProfile);
    const res = await bootstrap(s, body);
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await res.json()) as Problem;
    expect(problem.type).toBe('urn:sandlot:problem:resume-profile-stale');
    expect(problem.detail).toContain('endpoint');
    expect(await readAttempts(h.db, s.resume.operationId)).toEqual([]);
  });

  it('starts the Runtime when the registration names the profile resolved for the restored lease', async () => {
    const { s, sourceProfile, restored } = await resumed();
    const profileId = await resolve(s.sandbox);
    expect(profileId).not.toBe(sourceProfile);
    const res = await bootstrap(s, await coreStartsRuntime(h, s, restored as never, 2, profileId));
    if (res.status !== 200) throw new Error(await res.text());
    expect(((await res.json()) as { outcome: string }).outcome).toBe('Activated');
  });

  it.each<[string, string]>([
    ['a derived profile ID nobody resolved', `rp_${'a'.repeat(52)}`],
    ['a source profile ID where profiles resolve', 'codex'],
  ])('refuses %s: no attempt is issued', async (_case, profileId) => {
    const { s, restored } = await resumed();
    const res = await bootstrap(s, await coreStartsRuntime(h, s, restored as never, 2, profileId));
    expect(res.status).toBe(409);
    expect(((await res.json()) as Problem).type).toBe('urn:sandlot:problem:resume-profile-unresolved');
    expect(await readAttempts(h.db, s.resume.operationId)).toEqual([]);
  });
});
