// Runtime-bootstrap profile resolve and read, end to end: the simulated sandbox's placement names
// a real HTTPS AgentHost stand-in (a certificate made at test start for a Service DNS name, served
// on 127.0.0.x:8443), the resolve probes it through the production HttpsAgentHost, and only a live,
// no-store JSON answer over a fresh, correctly named TLS connection stores a mapping. A Pod change
// (the lease abandoned and provisioned again onto another Pod) resolves a new profile through a new
// connection, and the old one reads as stale; so does one whose source configuration was reloaded.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import { loadConfig } from '../../config/load.ts';
import { HttpsAgentHost } from '../../http/clients/agenthost-client.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { HostPod, live } from '../support/host-pod.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';

const SERVICE = 'sbx-profile.sandboxes.svc.cluster.local';
const PORT = 8443;
const SOURCE = {
  runtime: 'codex',
  model: { id: 'model-a', maxTokens: 4096 },
  tools: ['shell', 'git'],
  profileId: 'placeholder',
  configureEndpoint: { url: 'https://placeholder.invalid/configure', audience: 'placeholder' },
};
const RECEIVER = { configurePath: '/runtime/v1/configure', audience: 'agenthost-receiver' };

const placementOf = (podIp: string, podUid: string) => ({
  podIP: podIp,
  podUid,
  service: 'sbx-profile',
  serviceDns: SERVICE,
  endpoint: `https://${SERVICE}:${PORT}`,
});

interface Mapping {
  profileId: string;
  sourceProfileId: string;
  endpoint: string;
  configureUrl: string;
  audience: string;
  placement: { podIp: string; podUid: string; serverName: string; resourceGeneration: number };
  pins: { actor: string; selectionHash: string };
  profile: Record<string, unknown>;
  replayed?: boolean;
}

describe('runtime-bootstrap profile resolve and read', () => {
  const key = new Uint8Array(randomBytes(32));
  let handle: BackendHandle;
  let h: Harness;
  let dir: string;
  let caPem: string;
  let configuration: AgentHostConfiguration;
  let podA: HostPod;
  let podB: HostPod;
  let wrongName: HostPod;
  /** Where the next new sandbox is placed; each resource keeps the placement it was first given. */
  let nextPlacement = placementOf('127.0.0.2', 'pod-a');
  const placements = new Map<string, Record<string, string>>();

  beforeAll(async () => {
    const ca = await createTestCertificateAuthority('service-backend-ca');
    caPem = ca.caPem;
    podA = new HostPod(await ca.issue([SERVICE]));
    podB = new HostPod(await ca.issue([SERVICE]));
    wrongName = new HostPod(await ca.issue(['someone-else.sandboxes.svc.cluster.local']));
    await podA.listen('127.0.0.2', PORT);
    await podB.listen('127.0.0.3', PORT);
    await wrongName.listen('127.0.0.4', PORT);

    // Through the start-up path: the files are read and validated by loadConfig.
    dir = await mkdtemp(join(tmpdir(), 'sandlot-agenthost-'));
    await writeFile(
      join(dir, 'agenthost.json'),
      JSON.stringify({ receiver: RECEIVER, profiles: { codex: SOURCE } }),
    );
    await writeFile(join(dir, 'ca.pem'), caPem);
    const config = loadConfig({
      SANDLOT_AGENTHOST_CONFIG_FILE: join(dir, 'agenthost.json'),
      SANDLOT_AGENTHOST_CA_FILE: join(dir, 'ca.pem'),
    });
    configuration = config.agentHostProfiles!;
    expect(config.agentHostCaPem).toBe(caPem);

    handle = await openBackend('postgres');
    h = await buildHarness(handle.db, {
      key,
      workers: {},
      agentHost: new HttpsAgentHost({ caPem: config.agentHostCaPem!, timeoutMs: 1_000 }),
      agentHostProfiles: configuration,
      provider: {
        phaseDelaysMs: { imageReady: 5, started: 10 },
        placementFor: (resourceId) => {
          if (!placements.has(resourceId)) placements.set(resourceId, nextPlacement);
          return placements.get(resourceId) ?? {};
        },
      },
    });
  });
  afterEach(() => {
    podA.handler = live;
    nextPlacement = placementOf('127.0.0.2', 'pod-a');
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
    await Promise.all([podA.stop(), podB.stop(), wrongName.stop()]);
    await rm(dir, { recursive: true, force: true });
  });

  async function activeSandbox(run: string, provisionKey = 'prov-1', s?: Scenario): Promise<Scenario> {
    const scenario = s ?? (await setupScenario(h, { run }));
    const res = await h.request('POST', `${scenario.base}/sandbox/provision`, {
      token: scenario.token,
      body: provisionBody(scenario, provisionKey),
    });
    expect(res.status).toBe(202);
    const lease = await json<{ resourceGeneration: number }>(res);
    await waitForLease(
      h,
      scenario,
      (l) => l['state'] === 'Active' && l['resourceGeneration'] === lease.resourceGeneration,
    );
    return scenario;
  }

  const runToken = (run: string, subject = 'alice') =>
    h.token('acme', subject, { runBinding: { projectId: 'checkout', runId: run } });
  const resolve = (on: Harness, s: Scenario, token: string, source = 'codex') =>
    on.request('POST', `${s.base}/runtime-bootstrap/profiles/${source}/resolve`, { token });
  const read = (on: Harness, s: Scenario, token: string, profileId: string) =>
    on.request('GET', `${s.base}/runtime-bootstrap/profiles/${profileId}`, { token });
  const stored = async (s: Scenario) =>
    (
      await handle.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM runtime_profile_mappings WHERE environment_id = $1',
        [s.environmentId],
      )
    ).rows[0]?.n;
  const problemOf = async (res: Response) => json<{ type: string; reason?: string; probe?: string }>(res);

  it('resolves an endpoint-bound copy after a live probe, stores it once and replays it', async () => {
    const s = await activeSandbox('run-resolve');
    const token = await runToken('run-resolve');
    const before = { requests: podA.requests.length, connections: podA.connections };

    const first = await resolve(h, s, token);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const text = await first.text();
    const mapping = JSON.parse(text) as Mapping;
    const configureUrl = `https://${SERVICE}:${PORT}${RECEIVER.configurePath}`;
    expect(mapping).toMatchObject({
      sourceProfileId: 'codex',
      endpoint: `https://${SERVICE}:${PORT}`,
      configureUrl,
      audience: RECEIVER.audience,
      placement: { podIp: '127.0.0.2', podUid: 'pod-a', serverName: SERVICE, resourceGeneration: 1 },
      pins: { actor: 'alice' },
      replayed: false,
    });
    expect(mapping.profileId).toMatch(/^rp_[a-z2-7]{52}$/);
    // Only the profile ID and the configure endpoint differ from the source profile.
    expect(mapping.profile).toEqual({
      ...SOURCE,
      profileId: mapping.profileId,
      configureEndpoint: { url: configureUrl, audience: RECEIVER.audience },
    });
    expect(await stored(s)).toBe(1);

    // One probe of /health/live, by Service name, with nothing that could authenticate.
    const probes = podA.requests.slice(before.requests);
    expect(probes.map((r) => r.path)).toEqual(['/health/live']);
    expect(probes[0]?.headers['host']).toBe(`${SERVICE}:${PORT}`);
    for (const header of ['authorization', 'cookie', 'proxy-authorization']) {
      expect(probes[0]?.headers[header]).toBeUndefined();
    }
    // Nothing secret answers: no token, no key material.
    expect(text).not.toContain(token);
    expect(text).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);

    // A resolve carries no body, or exactly {}.
    const again = await h.request('POST', `${s.base}/runtime-bootstrap/profiles/codex/resolve`, {
      token,
      body: {},
    });
    expect(again.status).toBe(200);
    expect(await json<Mapping>(again)).toMatchObject({ profileId: mapping.profileId, replayed: true });
    expect(await stored(s)).toBe(1);
    // Every check is its own connection: the replay probed afresh.
    expect(podA.connections).toBe(before.connections + 2);

    const got = await read(h, s, token, mapping.profileId);
    expect(got.status).toBe(200);
    expect(got.headers.get('cache-control')).toBe('no-store');
    const readBack = await json<Mapping>(got);
    expect(readBack.replayed).toBeUndefined();
    expect({ ...readBack, replayed: mapping.replayed }).toEqual(mapping);
  });

  it('refuses a token without the run binding, another actor, and an unknown source profile', async () => {
    const s = await activeSandbox('run-actors');
    const token = await runToken('run-actors');
    const { profileId } = await json<Mapping>(await resolve(h, s, token));

    for (const res of [
      await resolve(h, s, s.token),
      await read(h, s, s.token, profileId),
      await resolve(h, s, await runToken('run-other')),
    ]) {
      expect(res.status).toBe(403);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect((await problemOf(res)).type).toBe('urn:sandlot:problem:run-binding-required');
    }

    const operator = await h.token('acme', 'ops', { operator: true });
    const grant = await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/bob', {
      token: operator,
      body: { permissions: ['ReadProjects', 'ReadRunSelection'] },
    });
    expect(grant.status).toBe(200);
    const bob = await runToken('run-actors', 'bob');
    const foreign = await read(h, s, bob, profileId);
    expect(foreign.status).toBe(403);
    expect((await problemOf(foreign)).type).toBe('urn:sandlot:problem:runtime-profile-actor-mismatch');
    // Bob resolves a profile of his own: the actor is part of the ID.
    const own = await json<Mapping>(await resolve(h, s, bob));
    expect(own.profileId).not.toBe(profileId);
    expect(own.pins.actor).toBe('bob');

    const withBody = await h.request('POST', `${s.base}/runtime-bootstrap/profiles/codex/resolve`, {
      token,
      body: { sourceProfileId: 'codex' },
    });
    expect(withBody.status).toBe(400);

    const unknown = await resolve(h, s, token, 'no-such-profile');
    expect(unknown.status).toBe(404);
    expect((await problemOf(unknown)).type).toBe('urn:sandlot:problem:runtime-profile-not-found');
  });

  const failures: [string, () => void, string][] = [
    [
      'a redirecting /health/live',
      () => {
        podA.handler = (_req, res) => {
          res.writeHead(307, {
            location: `https://${SERVICE}:${PORT}/elsewhere`,
            'cache-control': 'no-store',
          });
          res.end();
        };
      },
      'redirect-refused',
    ],
    [
      'a body that is still coming at the deadline',
      () => {
        podA.handler = (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.write('{"status":');
          setTimeout(() => res.end('"live"}'), 3_000).unref();
        };
      },
      'deadline-exceeded',
    ],
    [
      'a body over 4 KiB',
      () => {
        podA.handler = (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.end(JSON.stringify({ status: 'live', padding: 'x'.repeat(5_000) }));
        };
      },
      'body-too-large',
    ],
    [
      'a cacheable live answer',
      () => {
        podA.handler = (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: 'live' }));
        };
      },
      'cacheable-response',
    ],
    [
      'a certificate for another DNS name',
      () => {
        nextPlacement = placementOf('127.0.0.4', 'pod-wrong-name');
      },
      'tls-refused',
    ],
  ];

  it.each(failures)('refuses %s and stores nothing', async (_what, arrange, code) => {
    arrange();
    const run = `run-${code}`;
    const s = await activeSandbox(run);
    const res = await resolve(h, s, await runToken(run));
    expect(res.status).toBe(503);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await problemOf(res)).toMatchObject({
      type: 'urn:sandlot:problem:runtime-endpoint-not-live',
      probe: code,
    });
    expect(await stored(s)).toBe(0);
  });

  it('a Pod change resolves a new profile over a fresh connection, and the old one is stale', async () => {
    const run = 'run-pod-change';
    const s = await activeSandbox(run);
    const token = await runToken(run);
    const old = await json<Mapping>(await resolve(h, s, token));
    expect(old.placement.podIp).toBe('127.0.0.2');

    // The sandbox is replaced: abandoned, then provisioned again onto another Pod.
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const gone = await read(h, s, token, old.profileId);
    expect(gone.status).toBe(409);
    expect(await problemOf(gone)).toMatchObject({
      type: 'urn:sandlot:problem:runtime-profile-stale',
      reason: 'no-placement',
    });

    nextPlacement = placementOf('127.0.0.3', 'pod-b');
    await activeSandbox(run, 'prov-2', s);
    const seen = { a: podA.requests.length, b: podB.connections };
    const replaced = await resolve(h, s, token);
    expect(replaced.status).toBe(200);
    const fresh = await json<Mapping>(replaced);
    expect(fresh.profileId).not.toBe(old.profileId);
    expect(fresh).toMatchObject({
      replayed: false,
      placement: { podIp: '127.0.0.3', podUid: 'pod-b', resourceGeneration: 2 },
    });
    // The new Pod was asked over a new connection; the old Pod heard nothing more.
    expect(podB.connections).toBe(seen.b + 1);
    expect(podA.requests.length).toBe(seen.a);

    const stale = await read(h, s, token, old.profileId);
    expect(stale.status).toBe(409);
    expect(stale.headers.get('cache-control')).toBe('no-store');
    expect(await problemOf(stale)).toMatchObject({
      type: 'urn:sandlot:problem:runtime-profile-stale',
      reason: 'endpoint',
    });
    expect((await read(h, s, token, fresh.profileId)).status).toBe(200);
    expect(await stored(s)).toBe(2);
  });

  it('after a reload with another source profile the mapping is stale and never overwritten', async () => {
    const run = 'run-reload';
    const s = await activeSandbox(run);
    const token = await runToken(run);
    const { profileId } = await json<Mapping>(await resolve(h, s, token));

    const reloaded = await buildHarness(handle.db, {
      key,
      migrated: true,
      agentHost: new HttpsAgentHost({ caPem }),
      agentHostProfiles: { receiver: RECEIVER, profiles: { codex: { ...SOURCE, tools: ['shell'] } } },
    });
    try {
      const res = await read(reloaded, s, token, profileId);
      expect(res.status).toBe(409);
      expect(await problemOf(res)).toMatchObject({
        type: 'urn:sandlot:problem:runtime-profile-stale',
        reason: 'source-configuration',
      });
      const again = await resolve(reloaded, s, token);
      expect(again.status).toBe(409);
      expect((await problemOf(again)).type).toBe('urn:sandlot:problem:runtime-profile-conflict');
      expect(await stored(s)).toBe(1);
      // The original configuration still reads it.
      expect((await read(h, s, token, profileId)).status).toBe(200);
    } finally {
      await reloaded.close();
    }

    const unconfigured = await buildHarness(handle.db, { key, migrated: true });
    try {
      const res = await resolve(unconfigured, s, token);
      expect(res.status).toBe(409);
      expect((await problemOf(res)).type).toBe('urn:sandlot:problem:runtime-profiles-unavailable');
    } finally {
      await unconfigured.close();
    }
  });
});
