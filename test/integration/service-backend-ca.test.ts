// The internal service clients (Core's BuildTest and suspend/resume ports, Events, Projects and run
// selection) pin the service-backend-ca roots when SANDLOT_SERVICE_BACKEND_CA_FILE gives them:
// against a local HTTPS server whose certificate a throwaway CA issued for `localhost`, each client
// pinned to that CA is answered (the server's 404, which every port reads as "none"), each client
// pinned to another CA is refused in the TLS handshake before any request reaches the server (so
// no bearer leaves), and each client on the system trust store is refused too: the pin is what
// trusts the internal CA. The setting is read and checked at start like SANDLOT_AGENTHOST_CA_FILE.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreUnavailableError } from '../../actors/build-test/core-errors.ts';
import { EventsUnavailableError } from '../../actors/runtime-events/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { HttpCore } from '../../http/clients/core-client.ts';
import { UpstreamError } from '../../http/clients/fetch-json.ts';
import { HttpProjectsAuthority } from '../../http/clients/projects-client.ts';
import { HttpRunSelections } from '../../http/clients/run-selection-client.ts';
import { HttpRuntimeCore } from '../../http/clients/runtime-core-client.ts';
import { HttpRuntimeEvents } from '../../http/clients/runtime-events-client.ts';
import { freshStep } from '../contract/runtime-core-cases.ts';
import { actorOf, freshCheckpoint } from '../support/build-test-commands.ts';
import { rejection } from '../support/rejection.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';

const BEARER = 'acme-alice-service-token';
const actor = actorOf('acme', 'alice', BEARER);
const signal = () => AbortSignal.timeout(10_000);
const acknowledgment = {
  sessionId: 'session-1',
  eventId: 'event-1',
  objectReference: 'events:material-1',
  sha256: 'a'.repeat(64),
  length: 16,
};

/** Every client under test, each asked once; all of them read the server's 404 as "none". */
function clientsAt(url: string, caPem: string | undefined) {
  const pin = caPem === undefined ? {} : { caPem };
  const projects = new HttpProjectsAuthority(url, 2_000, pin);
  const selections = new HttpRunSelections(url, 2_000, pin);
  const core = new HttpCore({ baseUrl: url, timeoutMs: 2_000, ...pin });
  const runtimeCore = new HttpRuntimeCore({ baseUrl: url, timeoutMs: 2_000, ...pin });
  const events = new HttpRuntimeEvents({ baseUrl: url, timeoutMs: 2_000, ...pin });
  return {
    calls: {
      Projects: () => projects.permissions({ tenantId: 'acme', subject: 'alice' }, 'checkout'),
      'Run selection': () => selections.get('acme', 'checkout', 'run-1'),
      'Core (BuildTest)': () => core.acceptedCommand(actor, freshCheckpoint(), signal()),
      'Core (suspend/resume)': () => runtimeCore.currentRuntimeOperation(actor, freshStep(), signal()),
      Events: () => events.readProtectedMaterial(actor, freshStep(), acknowledgment, signal()),
    },
    close: () => {
      projects.close();
      selections.close();
    },
  };
}

describe('the internal service clients and the service-backend-ca pin', () => {
  let server: Server;
  let url: string;
  let caPem: string;
  let otherCaPem: string;
  let dir: string;
  const seen: string[] = [];

  beforeAll(async () => {
    const ca = await createTestCertificateAuthority('service-backend-ca');
    caPem = ca.caPem;
    otherCaPem = (await createTestCertificateAuthority('another-ca')).caPem;
    const { certPem, keyPem } = await ca.issue(['localhost']);
    server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(404, { 'cache-control': 'no-store', 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://localhost:${(server.address() as AddressInfo).port}`;
    dir = await mkdtemp(join(tmpdir(), 'sandlot-service-ca-'));
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('are answered over TLS verified against the pinned CA', async () => {
    const { calls, close } = clientsAt(url, caPem);
    try {
      const before = seen.length;
      expect(await calls.Projects()).toEqual(new Set());
      expect(await calls['Run selection']()).toBeNull();
      expect(await calls['Core (BuildTest)']()).toBeNull();
      expect(await calls['Core (suspend/resume)']()).toBeNull();
      expect(await calls.Events()).toBeNull();
      expect(seen.length - before).toBe(5);
    } finally {
      close();
    }
  });

  it.each([
    ['pinned to another CA', () => otherCaPem],
    ['on the system trust store', () => undefined],
  ])('refuse the server %s, before a request is sent', async (_case, pinOf) => {
    const { calls, close } = clientsAt(url, pinOf());
    try {
      const before = seen.length;
      for (const [name, call] of Object.entries(calls)) {
        const error = await rejection(call());
        const kinds = [UpstreamError, CoreUnavailableError, EventsUnavailableError];
        expect(
          kinds.some((kind) => error instanceof kind),
          name,
        ).toBe(true);
        expect((error as Error).message, name).toMatch(/TLS refused/);
        expect((error as Error).message, name).not.toContain(BEARER);
      }
      expect(seen.length).toBe(before);
    } finally {
      close();
    }
  });

  it('reads SANDLOT_SERVICE_BACKEND_CA_FILE at start: CA certificates only, absent unless set', async () => {
    const ok = join(dir, 'service-backend-ca.pem');
    await writeFile(ok, caPem);
    expect(loadConfig({ SANDLOT_SERVICE_BACKEND_CA_FILE: ok }).serviceBackendCaPem).toBe(caPem);
    expect(loadConfig({})).not.toHaveProperty('serviceBackendCaPem');
    const withKey = join(dir, 'with-key.pem');
    await writeFile(withKey, `${caPem}-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----\n`);
    expect(() => loadConfig({ SANDLOT_SERVICE_BACKEND_CA_FILE: withKey })).toThrow(
      /SANDLOT_SERVICE_BACKEND_CA_FILE.*private key/,
    );
    expect(() => loadConfig({ SANDLOT_SERVICE_BACKEND_CA_FILE: join(dir, 'absent.pem') })).toThrow(
      /SANDLOT_SERVICE_BACKEND_CA_FILE.*cannot read the file/,
    );
  });
});
