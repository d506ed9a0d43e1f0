// The HTTPS AgentHost client against real TLS servers standing in for two sandbox Pods (127.0.0.2
// and 127.0.0.3). The Pod is reached by IP while its certificate is checked for the Service DNS
// name against one pinned CA; a probe is live only for a no-store JSON answer, sends no credential,
// never follows a redirect, respects its deadline and body limit, and opens a fresh connection
// every time, so a connection to an old Pod can never vouch for its replacement.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentHostEndpoint, AgentHostTarget } from '../../actors/ports.ts';
import { AgentHostUnavailableError, HttpsAgentHost } from '../../http/clients/agenthost-client.ts';
import { HostPod, live, type Handler } from '../support/host-pod.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';

const NAME_1 = 'sbx-1.sandboxes.svc.cluster.local';
const NAME_2 = 'sbx-2.sandboxes.svc.cluster.local';

let caPem: string;
let otherCaPem: string;
let podA: HostPod;
let port: number;
let host: HttpsAgentHost;

const signal = () => AbortSignal.timeout(5_000);
const endpointA = (over: Partial<AgentHostEndpoint> = {}): AgentHostEndpoint => ({
  podIp: '127.0.0.2',
  podUid: 'pod-a',
  serverName: NAME_1,
  port,
  ...over,
});

beforeAll(async () => {
  const ca = await createTestCertificateAuthority('service-backend-ca');
  const other = await createTestCertificateAuthority('unrelated-ca');
  caPem = ca.caPem;
  otherCaPem = other.caPem;
  podA = new HostPod(await ca.issue([NAME_1]));
  port = await podA.listen('127.0.0.2');
  host = new HttpsAgentHost({ caPem });
});

afterEach(() => {
  podA.handler = live;
});

afterAll(async () => {
  await podA.stop();
});

describe('the live probe', () => {
  it('passes for a no-store JSON live answer and sends no credential', async () => {
    const before = podA.requests.length;
    expect(await host.probeLive(endpointA(), signal())).toEqual({ live: true });
    const seen = podA.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toBe('/health/live');
    expect(seen[0]?.headers['authorization']).toBeUndefined();
    expect(seen[0]?.headers['cookie']).toBeUndefined();
    expect(seen[0]?.headers['proxy-authorization']).toBeUndefined();
    // The request names the Service, not the Pod IP.
    expect(seen[0]?.headers['host']).toBe(`${NAME_1}:${port}`);
  });

  it('does not follow a redirect, even to a healthy path', async () => {
    podA.handler = (req, res) => {
      if (req.url === '/health/live') {
        res.writeHead(302, { location: '/elsewhere/live', 'cache-control': 'no-store' });
        res.end();
      } else live(req, res);
    };
    const before = podA.requests.length;
    expect(await host.probeLive(endpointA(), signal())).toMatchObject({
      live: false,
      code: 'redirect-refused',
    });
    expect(podA.requests.slice(before).map((r) => r.path)).toEqual(['/health/live']);
  });

  it('fails with deadline-exceeded when the body is still coming at the deadline', async () => {
    const short = new HttpsAgentHost({ caPem, timeoutMs: 300 });
    podA.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.write('{"status":');
      setTimeout(() => res.end('"live"}'), 1_500).unref();
    };
    const started = Date.now();
    expect(await short.probeLive(endpointA(), signal())).toMatchObject({
      live: false,
      code: 'deadline-exceeded',
    });
    expect(Date.now() - started).toBeLessThan(1_200);
  });

  it.each([
    ['declared with Content-Length', true],
    ['streamed without Content-Length', false],
  ])('refuses a body over 4 KiB (%s)', async (_case, declared) => {
    const big = JSON.stringify({ status: 'live', padding: 'x'.repeat(5000) });
    podA.handler = (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        ...(declared ? { 'content-length': Buffer.byteLength(big) } : {}),
      });
      res.end(big);
    };
    expect(await host.probeLive(endpointA(), signal())).toMatchObject({
      live: false,
      code: 'body-too-large',
    });
  });

  it('refuses a certificate for another DNS name', async () => {
    expect(await host.probeLive(endpointA({ serverName: NAME_2 }), signal())).toMatchObject({
      live: false,
      code: 'tls-refused',
    });
  });

  it('refuses a certificate from another CA', async () => {
    const elsewhere = new HttpsAgentHost({ caPem: otherCaPem });
    expect(await elsewhere.probeLive(endpointA(), signal())).toMatchObject({
      live: false,
      code: 'tls-refused',
    });
  });

  it.each<[string, Handler, string]>([
    [
      'an answer without no-store',
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
        res.end('{"status":"live"}');
      },
      'cacheable-response',
    ],
    [
      'a text answer',
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
        res.end('live');
      },
      'not-json',
    ],
    [
      'invalid JSON labelled JSON',
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end('{"status":');
      },
      'not-json',
    ],
    [
      'a JSON answer that is not live',
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end('{"status":"starting"}');
      },
      'not-live',
    ],
    [
      'a 503',
      (_req, res) => {
        res.writeHead(503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end('{"status":"live"}');
      },
      'not-live',
    ],
  ])('fails for %s', async (_case, handler, code) => {
    podA.handler = handler;
    expect(await host.probeLive(endpointA(), signal())).toMatchObject({ live: false, code });
  });

  it('ignores proxy settings in the environment', async () => {
    const saved = { HTTPS_PROXY: process.env['HTTPS_PROXY'], https_proxy: process.env['https_proxy'] };
    process.env['HTTPS_PROXY'] = 'http://127.0.0.1:9';
    process.env['https_proxy'] = 'http://127.0.0.1:9';
    try {
      expect(await host.probeLive(endpointA(), signal())).toEqual({ live: true });
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('fails with aborted when the caller gives up', async () => {
    podA.handler = () => {}; // never answers
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100).unref();
    expect(await host.probeLive(endpointA(), controller.signal)).toMatchObject({
      live: false,
      code: 'aborted',
    });
  });

  it('refuses an endpoint whose server name is an IP address', async () => {
    expect(await host.probeLive(endpointA({ serverName: '127.0.0.2' }), signal())).toMatchObject({
      live: false,
      code: 'bad-endpoint',
    });
  });
});

describe('a Pod replaced between probes', () => {
  it('is probed over a new TLS connection to the new address; no connection is reused', async () => {
    // Its own Pod A, so the counts are this test's alone and stopping it leaves the others alone.
    const ca = await createTestCertificateAuthority('service-backend-ca-replacement');
    const oldPod = new HostPod(await ca.issue([NAME_1]));
    const newPod = new HostPod(await ca.issue([NAME_1]));
    const podPort = await oldPod.listen('127.0.0.2');
    await newPod.listen('127.0.0.3', podPort);
    const client = new HttpsAgentHost({ caPem: ca.caPem });
    const endpoint: AgentHostEndpoint = {
      podIp: '127.0.0.2',
      podUid: 'pod-a',
      serverName: NAME_1,
      port: podPort,
    };
    try {
      expect(await client.probeLive(endpoint, signal())).toEqual({ live: true });
      expect(await client.probeLive(endpoint, signal())).toEqual({ live: true });
      // One TLS connection per probe on the old Pod: none was kept alive for the next.
      expect(oldPod.connections).toBe(2);
      expect(oldPod.requests).toHaveLength(2);

      await oldPod.stop();
      const replaced = { ...endpoint, podIp: '127.0.0.3', podUid: 'pod-b' };
      expect(await client.probeLive(replaced, signal())).toEqual({ live: true });
      expect(newPod.connections).toBe(1);
      expect(newPod.requests).toHaveLength(1);
      expect(oldPod.connections).toBe(2);
      expect(oldPod.requests).toHaveLength(2);

      // The old address is gone: probing it fails rather than reaching anything left open.
      expect(await client.probeLive(endpoint, signal())).toMatchObject({ live: false, code: 'unreachable' });
    } finally {
      await oldPod.stop();
      await newPod.stop();
    }
  });
});

describe('readiness', () => {
  const target = (over: Partial<AgentHostTarget> = {}): AgentHostTarget => ({
    environmentId: 'env-1',
    operationId: 'op-1',
    resourceGeneration: 1,
    providerFence: 1,
    resourceId: 'claim-1',
    endpoint: endpointA(),
    ...over,
  });
  const answer =
    (body: unknown, status = 200): Handler =>
    (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
  const configured = {
    configured: true,
    environmentId: 'env-1',
    operationId: 'op-1',
    resourceGeneration: 1,
    podUid: 'pod-a',
    workspaceMountPath: '/workspace',
    networkPolicyGeneration: 3,
    configuredAt: '2025-01-02T03:04:05.678Z',
  };

  it('parses a configured answer with its bindings', async () => {
    podA.handler = answer(configured);
    const before = podA.requests.length;
    expect(await host.readiness(target(), signal())).toEqual(configured);
    const seen = podA.requests.slice(before);
    expect(seen.map((r) => r.path)).toEqual(['/runtime/v1/readiness']);
    expect(seen[0]?.headers['authorization']).toBeUndefined();
  });

  it('parses a configured answer naming the runtime profile the Host was configured through', async () => {
    const through = { ...configured, profileId: `rp_${'a'.repeat(52)}` };
    podA.handler = answer(through);
    expect(await host.readiness(target(), signal())).toEqual(through);
  });

  it('parses a not-configured answer', async () => {
    podA.handler = answer({ configured: false, reason: 'awaiting configuration' });
    expect(await host.readiness(target(), signal())).toEqual({
      configured: false,
      reason: 'awaiting configuration',
    });
  });

  it.each<[string, unknown]>([
    ['a missing binding', { ...configured, podUid: undefined }],
    ['a wrongly typed generation', { ...configured, resourceGeneration: '1' }],
    ['an unknown member', { ...configured, extra: true }],
    ['no configured flag', { reason: 'x' }],
    ['a relative mount path', { ...configured, workspaceMountPath: 'workspace' }],
    ['a configuredAt that is not an instant', { ...configured, configuredAt: 'yesterday' }],
    ['an empty profile ID', { ...configured, profileId: '' }],
  ])('throws on a malformed answer: %s', async (_case, body) => {
    podA.handler = answer(body);
    await expect(host.readiness(target(), signal())).rejects.toBeInstanceOf(AgentHostUnavailableError);
  });

  it('throws when the Host answers with an error status', async () => {
    podA.handler = answer(configured, 500);
    await expect(host.readiness(target(), signal())).rejects.toMatchObject({ reason: 'bad-response' });
  });

  it('throws when the target has no endpoint', async () => {
    await expect(host.readiness(target({ endpoint: null }), signal())).rejects.toMatchObject({
      code: 'agenthost-unavailable',
      reason: 'no-endpoint',
    });
  });

  it('throws when TLS is refused', async () => {
    const elsewhere = new HttpsAgentHost({ caPem: otherCaPem });
    await expect(elsewhere.readiness(target(), signal())).rejects.toMatchObject({ reason: 'tls-refused' });
  });
});
