// The private host-control listener and its client over real TLS 1.3 sockets on 127.0.0.1: a server
// certificate for a DNS name (the client checks the name while connecting to the address), two
// hosts' client certificates from the hosts' CA, an in-memory certificate directory that can revoke
// a generation, and a client certificate from an unrelated CA. Handlers are recorded, so each
// refusal also proves that nothing reached one.
import { generateKeyPairSync } from 'node:crypto';
import { request } from 'node:https';
import { connect } from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { problemClass, SandlotError } from '../../lib/errors.ts';
import { ControlClient, type ControlClientOptions } from '../../providers/sandbox-host/control-client.ts';
import { ControlRefusedError, ControlUnavailableError } from '../../providers/sandbox-host/control-errors.ts';
import {
  startControlListener,
  type ControlHandlers,
  type ControlListener,
} from '../../providers/sandbox-host/control-listener.ts';
import type { HostCertificateDirectory } from '../../providers/sandbox-host/directory.ts';
import { envelopeDigest, signEnvelope, type EnvelopeWire } from '../../providers/sandbox-host/envelope.ts';
import { HostResultRefusedError } from '../../providers/sandbox-host/errors.ts';
import type { ControlPort } from '../../providers/sandbox-host/reference-host.ts';
import { signHostResult, type HostResultWire } from '../../providers/sandbox-host/host-result.ts';
import { createTestCertificateAuthority, type ClientCertificate } from '../support/tls-certificates.ts';

const NAME = 'control.sandlot.test';
const ADDRESS = '127.0.0.1';
const NOW = new Date('2026-12-01T12:00:00.000Z');

/** An in-memory directory: fingerprint → host and generation, until revoked. */
class MemoryDirectory implements HostCertificateDirectory {
  readonly entries = new Map<string, { hostId: string; generation: number }>();
  readonly seen: { fingerprint: string; now: Date }[] = [];

  lookup(fingerprint: string, now: Date) {
    this.seen.push({ fingerprint, now });
    return Promise.resolve(this.entries.get(fingerprint) ?? null);
  }
}

class RefusedHere extends problemClass({
  code: 'assignment-conflict',
  status: 409,
  title: 'Assignment conflict',
}) {}

type Call = { kind: 'assignments'; hostId: string; after: number } | { kind: 'result'; hostId: string };

let caPem: string;
let serverCaPem: string;
let otherCaPem: string;
let hostA: ClientCertificate;
let hostB: ClientCertificate;
let stranger: ClientCertificate;
let listener: ControlListener;
let baseUrl: string;
const directory = new MemoryDirectory();
const calls: Call[] = [];
let behaviour: 'ok' | 'crash' | 'refuse' | 'reject-result' | 'hang' = 'ok';

const controlKey = generateKeyPairSync('ed25519');
const hostKey = generateKeyPairSync('ed25519');

function envelopeFor(hostId: string, sequence: number): EnvelopeWire {
  return signEnvelope(
    {
      tenantId: 'tenant-1',
      principal: { subject: 'user:alice' },
      operation: { id: `op-${sequence}`, kind: 'provision' },
      effectiveSpec: { image: 'sandbox:1' },
      capabilitySnapshot: { capabilities: ['process'] },
      lease: { environmentId: 'env-1', operationId: 'op-lease-1', resourceGeneration: 1 },
      fence: { providerFence: 1 },
      hostId,
      sequence,
      issuedAt: NOW,
      expiresAt: new Date(NOW.getTime() + 60_000),
      revocationEpoch: 1,
    },
    { version: 1, privateKey: controlKey.privateKey },
  );
}

function resultFor(hostId: string, envelope: EnvelopeWire): HostResultWire {
  return signHostResult(
    {
      operationId: envelope.body.operation.id,
      envelopeDigest: envelopeDigest(envelope),
      status: 'started',
      document: { ready: true },
      stdout: [Buffer.from('hello\n')],
      stderr: [],
      completedAt: NOW,
    },
    { hostId, version: 1, privateKey: hostKey.privateKey },
  );
}

const handlers: ControlHandlers = {
  async assignments(hostId, after, context) {
    calls.push({ kind: 'assignments', hostId, after });
    if (behaviour === 'crash') throw new Error('relation "secret_table" password=hunter2 failed');
    if (behaviour === 'refuse') throw new RefusedHere('not for you, detail stays in the log');
    if (behaviour === 'hang') {
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    }
    return { envelopes: [envelopeFor(hostId, after + 1)] };
  },
  result(hostId) {
    calls.push({ kind: 'result', hostId });
    if (behaviour === 'reject-result') {
      return Promise.reject(new HostResultRefusedError('result-binding-mismatch', 'operationId differs'));
    }
    return Promise.resolve({ accepted: true });
  },
};

const client = (cert: ClientCertificate, hostId: string, over: Partial<ControlClientOptions> = {}) =>
  new ControlClient({
    baseUrl,
    hostId,
    certPem: cert.certPem,
    keyPem: cert.keyPem,
    caPem: serverCaPem,
    timeoutMs: 3_000,
    address: ADDRESS,
    ...over,
  });

const signal = () => AbortSignal.timeout(5_000);

/** A raw request with a host's certificate, to see status, headers and body exactly. */
function raw(
  cert: ClientCertificate,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: ADDRESS,
      port: listener.port,
      servername: NAME,
      method,
      path,
      cert: cert.certPem,
      key: cert.keyPem,
      ca: serverCaPem,
      agent: false,
      headers: { host: NAME, ...headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.end(body);
  });
}

async function refusal(promise: Promise<unknown>): Promise<ControlRefusedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ControlRefusedError);
  return error as ControlRefusedError;
}

beforeAll(async () => {
  const hostsCa = await createTestCertificateAuthority('sandbox-hosts-ca');
  const serverCa = await createTestCertificateAuthority('host-control-server-ca');
  const other = await createTestCertificateAuthority('unrelated-ca');
  caPem = hostsCa.caPem;
  serverCaPem = serverCa.caPem;
  otherCaPem = other.caPem;
  hostA = await hostsCa.issueClient('host-a');
  hostB = await hostsCa.issueClient('host-b');
  stranger = await other.issueClient('host-a');
  const server = await serverCa.issue([NAME]);
  listener = await startControlListener({
    host: ADDRESS,
    port: 0,
    certPem: server.certPem,
    keyPem: server.keyPem,
    clientCaPem: caPem,
    directory,
    handlers,
    now: () => NOW,
  });
  baseUrl = `https://${NAME}:${listener.port}`;
});

beforeEach(() => {
  behaviour = 'ok';
  calls.length = 0;
  directory.entries.clear();
  directory.entries.set(hostA.fingerprint, { hostId: 'host-a', generation: 1 });
  directory.entries.set(hostB.fingerprint, { hostId: 'host-b', generation: 3 });
});

afterAll(async () => {
  await listener.close();
});

describe('an enrolled host', () => {
  it('fetches its assignments and reports a result through the client', async () => {
    const a = client(hostA, 'host-a');
    // The reference host's daemon takes the client as its control port unchanged.
    const port: ControlPort = a;
    expect(port).toBe(a);
    const envelopes = await a.fetchAssignments(4, signal());
    expect(envelopes).toHaveLength(1);
    const envelope = envelopes[0] as EnvelopeWire;
    expect(envelope.body.sequence).toBe(5);
    expect(envelope.body.hostId).toBe('host-a');
    await expect(a.reportResult(resultFor('host-a', envelope), signal())).resolves.toBeUndefined();
    expect(calls).toEqual([
      { kind: 'assignments', hostId: 'host-a', after: 4 },
      { kind: 'result', hostId: 'host-a' },
    ]);
    // The exact certificate was looked up on each request, at the listener's clock.
    expect(directory.seen.slice(-2)).toEqual([
      { fingerprint: hostA.fingerprint, now: NOW },
      { fingerprint: hostA.fingerprint, now: NOW },
    ]);
  });

  it('gets JSON that is never cached', async () => {
    const answer = await raw(hostA, 'GET', '/v1/hosts/host-a/assignments?after=0');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.headers['cache-control']).toBe('no-store');
  });
});

describe('authentication', () => {
  it('refuses a host whose generation the directory no longer knows (revoked) with 403', async () => {
    const b = client(hostB, 'host-b');
    await b.fetchAssignments(0, signal());
    directory.entries.delete(hostB.fingerprint);
    calls.length = 0;
    const error = await refusal(b.fetchAssignments(0, signal()));
    expect(error.problem).toEqual({ status: 403, type: 'host-forbidden' });
    const result = await refusal(b.reportResult(resultFor('host-b', envelopeFor('host-b', 1)), signal()));
    expect(result.problem?.status).toBe(403);
    expect(calls).toEqual([]);
  });

  it('fails the handshake for a client certificate from another CA', async () => {
    const error = await client(stranger, 'host-a')
      .fetchAssignments(0, signal())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(SandlotError);
    expect(error instanceof ControlRefusedError || error instanceof ControlUnavailableError).toBe(true);
    expect((error as Error).message).not.toContain('BEGIN');
    expect(calls).toEqual([]);
    expect(directory.seen.some((s) => s.fingerprint === stranger.fingerprint)).toBe(false);
  });

  it('refuses a TLS 1.2-only client', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const socket = connect({
        host: ADDRESS,
        port: listener.port,
        servername: NAME,
        ca: serverCaPem,
        cert: hostA.certPem,
        key: hostA.keyPem,
        maxVersion: 'TLSv1.2',
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(outcome).not.toBe('connected');
    expect(outcome).toMatch(/PROTOCOL_VERSION|VERSION|ERR_SSL/);
  });

  it('refuses a server whose certificate is not from the pinned CA or not for the name', async () => {
    const wrongCa = await refusal(
      client(hostA, 'host-a', { caPem: otherCaPem }).fetchAssignments(0, signal()),
    );
    expect(wrongCa.reason).toBe('tls-refused');
    const wrongName = await refusal(
      client(hostA, 'host-a', { baseUrl: `https://other.sandlot.test:${listener.port}` }).fetchAssignments(
        0,
        signal(),
      ),
    );
    expect(wrongName.reason).toBe('tls-refused');
    expect(calls).toEqual([]);
  });

  it("answers 403 to a host asking for another host's path or reporting another host's result", async () => {
    const other = await raw(hostA, 'GET', '/v1/hosts/host-b/assignments?after=0');
    expect(other.status).toBe(403);
    expect(other.headers['content-type']).toBe('application/problem+json');
    const spoofed = client(hostA, 'host-b');
    expect((await refusal(spoofed.fetchAssignments(0, signal()))).problem?.status).toBe(403);
    const body = JSON.stringify(resultFor('host-b', envelopeFor('host-b', 1)));
    const foreign = await raw(hostA, 'POST', '/v1/hosts/host-a/results', body, {
      'content-type': 'application/json',
    });
    expect(foreign.status).toBe(403);
    expect(calls).toEqual([]);
  });
});

describe('requests', () => {
  const json = { 'content-type': 'application/json' };

  it('refuses a malformed result body with 400 before any handler', async () => {
    const notJson = await raw(hostA, 'POST', '/v1/hosts/host-a/results', '{"body":', json);
    expect(notJson.status).toBe(400);
    const wire = resultFor('host-a', envelopeFor('host-a', 1));
    const extra = await raw(
      hostA,
      'POST',
      '/v1/hosts/host-a/results',
      JSON.stringify({ ...wire, x: 1 }),
      json,
    );
    expect(extra.status).toBe(400);
    expect(JSON.parse(extra.text)).toMatchObject({
      type: 'urn:sandlot:problem:result-malformed',
      status: 400,
    });
    const viaClient = await refusal(
      client(hostA, 'host-a').reportResult({ ...wire, keyVersion: 0 }, signal()),
    );
    expect(viaClient.problem).toEqual({ status: 400, type: 'result-malformed' });
    expect(calls).toEqual([]);
  });

  it.each([
    ['an unknown path', 'GET', '/v1/hosts/host-a/secrets', 404],
    ['the wrong method', 'DELETE', '/v1/hosts/host-a/assignments?after=0', 405],
    ['no after', 'GET', '/v1/hosts/host-a/assignments', 400],
    ['a negative after', 'GET', '/v1/hosts/host-a/assignments?after=-1', 400],
    ['a non-canonical after', 'GET', '/v1/hosts/host-a/assignments?after=01', 400],
    ['an extra query member', 'GET', '/v1/hosts/host-a/assignments?after=0&all=1', 400],
  ])('answers %s with a no-store problem', async (_name, method, path, status) => {
    const answer = await raw(hostA, method, path);
    expect(answer.status).toBe(status);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(answer.text)).toMatchObject({ status });
    if (status === 405) expect(answer.headers['allow']).toBe('GET');
    expect(calls).toEqual([]);
  });

  it('answers 415 to a result that is not JSON and 413 to one over the limit', async () => {
    const text = await raw(hostA, 'POST', '/v1/hosts/host-a/results', '{}', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    const big = `{"x":"${'a'.repeat(1024 * 1024)}"}`;
    const large = await raw(hostA, 'POST', '/v1/hosts/host-a/results', big, json);
    expect(large.status).toBe(413);
    expect(calls).toEqual([]);
  });
});

describe('handler failures', () => {
  it('never leak details: an unexpected error is a bare 500, the client sees unavailable', async () => {
    behaviour = 'crash';
    const answer = await raw(hostA, 'GET', '/v1/hosts/host-a/assignments?after=0');
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.text)).toEqual({
      type: 'urn:sandlot:problem:internal-error',
      title: 'Internal error',
      status: 500,
    });
    expect(answer.text).not.toMatch(/secret|hunter2|relation/);
    const error = await client(hostA, 'host-a')
      .fetchAssignments(0, signal())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlUnavailableError);
    expect((error as Error).message).not.toMatch(/secret|hunter2/);
  });

  it('keeps a refusal slug and status but not its message', async () => {
    behaviour = 'refuse';
    const answer = await raw(hostA, 'GET', '/v1/hosts/host-a/assignments?after=0');
    expect(JSON.parse(answer.text)).toEqual({
      type: 'urn:sandlot:problem:assignment-conflict',
      title: 'Assignment conflict',
      status: 409,
    });
    behaviour = 'reject-result';
    const wire = resultFor('host-a', envelopeFor('host-a', 1));
    const refused = await refusal(client(hostA, 'host-a').reportResult(wire, signal()));
    expect(refused.problem).toEqual({ status: 422, type: 'result-binding-mismatch' });
    expect(refused.message).not.toContain('operationId differs');
  });
});

describe('the client', () => {
  it('gives up at its deadline as unavailable', async () => {
    behaviour = 'hang';
    const started = Date.now();
    const error = await client(hostA, 'host-a', { timeoutMs: 300 })
      .fetchAssignments(0, signal())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlUnavailableError);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('reports a closed port as unavailable', async () => {
    const closed = client(hostA, 'host-a', { baseUrl: `https://${NAME}:1` });
    await expect(closed.fetchAssignments(0, signal())).rejects.toBeInstanceOf(ControlUnavailableError);
  });

  it('refuses an answer over its size bound', async () => {
    const small = client(hostA, 'host-a', { maxResponseBytes: 64 });
    expect((await refusal(small.fetchAssignments(0, signal()))).reason).toBe('body-too-large');
  });

  it('refuses a base URL that is not https by DNS name', () => {
    expect(() => client(hostA, 'host-a', { baseUrl: `http://${NAME}:1` })).toThrow(ControlRefusedError);
    expect(() => client(hostA, 'host-a', { baseUrl: `https://127.0.0.1:1` })).toThrow(ControlRefusedError);
    expect(() => client(hostA, 'host-a', { baseUrl: `https://${NAME}:1/x` })).toThrow(ControlRefusedError);
  });
});
