// The first real sandbox-host protocol round trip, on PostgreSQL and over mutual TLS on 127.0.0.1:
// a host enrolled with the local-unsafe verifier (certificates made at test start), the control
// listener authenticating it through the PostgreSQL certificate directory, the assignment handlers
// over the store, and a ReferenceHost whose ControlPort is a ControlClient. The control plane is
// "restarted" (new pool, new listener) to show that it re-serves byte-identical envelopes and the
// host answers them as replays with no second effect; a forged result is refused and not stored.
// Reads do not fence (a describe with a higher fence locks nothing out), and an envelope that
// expires before the host sees it is answered with a signed refusal, so the host never stalls.
import { generateKeyPairSync } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.ts';
import {
  type AssignmentRequest,
  AssignmentStaleFenceError,
  assignmentsAfter,
  controlHandlersFor,
  issueAssignment,
  loadHostResultKeys,
  recordResult,
} from '../../providers/sandbox-host/assignments.ts';
import { createPgHostCertificateDirectory } from '../../providers/sandbox-host/certificate-rotation.ts';
import { ControlClient } from '../../providers/sandbox-host/control-client.ts';
import { ControlRefusedError } from '../../providers/sandbox-host/control-errors.ts';
import { type ControlListener, startControlListener } from '../../providers/sandbox-host/control-listener.ts';
import { enrollHost } from '../../providers/sandbox-host/enrollment.ts';
import type { EnvelopeWire } from '../../providers/sandbox-host/envelope.ts';
import { HostResultRefusedError } from '../../providers/sandbox-host/errors.ts';
import { createLocalRecordEffects, type HostEffects } from '../../providers/sandbox-host/host-effects.ts';
import { savedResult } from '../../providers/sandbox-host/host-journal.ts';
import {
  type HostResultWire,
  signHostResult,
  verifyHostResult,
} from '../../providers/sandbox-host/host-result.ts';
import { createLocalUnsafeVerifier } from '../../providers/sandbox-host/local-unsafe-verifier.ts';
import { type ControlPort, ReferenceHost } from '../../providers/sandbox-host/reference-host.ts';
import { replaceTrustDurably } from '../../providers/sandbox-host/trust-store.ts';
import { createTrust, type VerificationKey } from '../../providers/sandbox-host/trust.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { provisionSpec } from '../support/sandbox-host-envelopes.ts';
import { type ClientCertificate, createTestCertificateAuthority } from '../support/tls-certificates.ts';

const HOST = 'host-rt-1';
const NAME = 'control.sandlot.test';
const ADDRESS = '127.0.0.1';
const DAY = 86_400_000;

const controlKey = generateKeyPairSync('ed25519');
const hostKey = generateKeyPairSync('ed25519');
const rogueKey = generateKeyPairSync('ed25519');
const signer = { version: 1, privateKey: controlKey.privateKey };
const started = Date.now();
const controlVerificationKey: VerificationKey = {
  version: 1,
  publicKey: controlKey.publicKey,
  notBefore: new Date(started - DAY).toISOString(),
  notAfter: new Date(started + 30 * DAY).toISOString(),
};

let iso: IsolatedPostgres;
let dir: string;
let caPem: string;
let serverCert: { certPem: string; keyPem: string };
let serverCaPem: string;
let hostCert: ClientCertificate;

/** One control-plane "process": a pool, the listener over it, and a host's client to it. */
interface ControlPlane {
  db: Database;
  listener: ControlListener;
  client: ControlClient;
}
let control: ControlPlane;

async function startControlPlane(): Promise<ControlPlane> {
  const db = iso.open();
  const listener = await startControlListener({
    host: ADDRESS,
    port: 0,
    certPem: serverCert.certPem,
    keyPem: serverCert.keyPem,
    clientCaPem: caPem,
    directory: createPgHostCertificateDirectory(db),
    handlers: controlHandlersFor(db),
  });
  const client = new ControlClient({
    baseUrl: `https://${NAME}:${listener.port}`,
    hostId: HOST,
    certPem: hostCert.certPem,
    keyPem: hostCert.keyPem,
    caPem: serverCaPem,
    timeoutMs: 5_000,
    address: ADDRESS,
  });
  return { db, listener, client };
}

async function stopControlPlane(plane: ControlPlane): Promise<void> {
  await plane.listener.close();
  await plane.db.close();
}

/** The host's port: always the current control plane's client; `loseNextReport` drops one ack. */
let loseNextReport = false;
const port: ControlPort = {
  fetchAssignments: (after, signal) => control.client.fetchAssignments(after, signal),
  reportResult: (wire, signal) => {
    if (loseNextReport) {
      loseNextReport = false; // the host saw success; the control plane never stored it
      return Promise.resolve();
    }
    return control.client.reportResult(wire, signal);
  },
};

const effectCalls = { provision: 0 };
let host: ReferenceHost;
const signal = () => AbortSignal.timeout(10_000);

const request = (operationId: string): AssignmentRequest => ({
  hostId: HOST,
  tenantId: 'tenant-1',
  principal: { subject: 'user:alice' },
  operation: { id: operationId, kind: 'provision' },
  lease: { environmentId: `env-${operationId}`, operationId: `lease-${operationId}`, resourceGeneration: 1 },
  fence: { providerFence: 1 },
  spec: provisionSpec({
    environmentId: `env-${operationId}`,
    operationId: `lease-${operationId}`,
    providerFence: 1,
  }),
  capabilities: { capabilities: ['process'] },
  ttlMs: 600_000,
});

interface StoredRow {
  sequence: number;
  state: string;
  result: unknown;
  envelope_sha256: string;
}

async function rows(db: Database): Promise<StoredRow[]> {
  const { rows: found } = await db.query<StoredRow>(
    `SELECT sequence, state, result, envelope_sha256 FROM sandbox_host_assignments
      WHERE host_id = $1 ORDER BY sequence`,
    [HOST],
  );
  return found;
}

async function row(db: Database, sequence: number): Promise<StoredRow> {
  const found = (await rows(db)).find((r) => r.sequence === sequence);
  if (found === undefined) throw new Error(`no row ${sequence}`);
  return found;
}

async function verifiedStored(db: Database, sequence: number): Promise<HostResultWire> {
  const stored = await row(db, sequence);
  expect(stored.state).toBe('Reported');
  const wire = stored.result as HostResultWire;
  const verdict = verifyHostResult(wire, await loadHostResultKeys(db, HOST), {
    hostId: HOST,
    operationId: wire.body.operationId,
    envelopeDigest: stored.envelope_sha256,
  });
  expect(verdict.ok).toBe(true);
  return wire;
}

function forgedResult(envelope: EnvelopeWire, digest: string, privateKey = rogueKey.privateKey) {
  return signHostResult(
    {
      operationId: envelope.body.operation.id,
      envelopeDigest: digest,
      status: 'succeeded',
      document: { forged: true },
      stdout: [],
      stderr: [],
      completedAt: new Date(),
    },
    { hostId: HOST, version: 1, privateKey },
  );
}

beforeAll(async () => {
  iso = await isolatedPostgres();
  dir = await mkdtemp(join(tmpdir(), 'sandlot-roundtrip-'));
  const hostsCa = await createTestCertificateAuthority('sandbox-hosts-ca');
  const serverCa = await createTestCertificateAuthority('host-control-server-ca');
  caPem = hostsCa.caPem;
  serverCaPem = serverCa.caPem;
  serverCert = await serverCa.issue([NAME]);
  hostCert = await hostsCa.issueClient(HOST);

  control = await startControlPlane();
  await migrate(control.db);
  await replaceTrustDurably(control.db, { current: controlVerificationKey, next: null, revocationEpoch: 1 });
  const evidence = new TextEncoder().encode(
    JSON.stringify({
      hostId: HOST,
      certificatePem: hostCert.certPem,
      resultPublicKeyPem: hostKey.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    }),
  );
  expect(await enrollHost(control.db, evidence, createLocalUnsafeVerifier())).toMatchObject({
    outcome: 'accepted',
    hostId: HOST,
  });

  const inner = createLocalRecordEffects(join(dir, 'sandboxes'), () => new Date());
  const effects: HostEffects = {
    ...inner,
    provision: (body) => {
      effectCalls.provision++;
      return inner.provision(body);
    },
  };
  host = await ReferenceHost.open({
    hostId: HOST,
    journalDir: join(dir, 'journal'),
    trust: createTrust({ current: controlVerificationKey, next: null, revocationEpoch: 1 }),
    signer: { hostId: HOST, version: 1, privateKey: hostKey.privateKey },
    control: port,
    effects,
    now: () => new Date(),
  });
}, 60_000);

afterAll(async () => {
  await host.close().catch(() => undefined);
  await control.listener.close().catch(() => undefined);
  await iso.drop();
  await rm(dir, { recursive: true, force: true });
});

const issuedJson: string[] = [];

describe('the sandbox-host round trip', () => {
  it('issues a provision envelope and one host step stores the verified host-signed result', async () => {
    const issued = await issueAssignment(control.db, signer, request('op-1'));
    expect(issued).toMatchObject({ sequence: 1, replayed: false });
    issuedJson.push(JSON.stringify(issued.envelope));

    const report = await host.step(signal());
    expect(report).toMatchObject({ fetched: 1, accepted: 1, replayed: 0, refused: 0, reported: 1 });
    expect(effectCalls.provision).toBe(1);
    const stored = await verifiedStored(control.db, 1);
    expect(stored.body.envelopeDigest).toBe(issued.envelopeDigest);
    expect(stored.body.outcome.status).toBe('succeeded');
    expect(canonicalJson(stored)).toBe(canonicalJson(savedResult(host.state, 1)));

    // The same operation again is the same envelope; the same result again is a replay.
    const again = await issueAssignment(control.db, signer, request('op-1'));
    expect(again).toMatchObject({ sequence: 1, replayed: true });
    expect(JSON.stringify(again.envelope)).toBe(issuedJson[0]);
    const keys = await loadHostResultKeys(control.db, HOST);
    expect(await recordResult(control.db, HOST, stored, keys)).toEqual({ sequence: 1, replayed: true });
  });

  it('after a control restart re-serves byte-identical envelopes, answered as replays with no second effect', async () => {
    const second = await issueAssignment(control.db, signer, request('op-2'));
    expect(second.sequence).toBe(2);
    issuedJson.push(JSON.stringify(second.envelope));
    loseNextReport = true;
    expect(await host.step(signal())).toMatchObject({ accepted: 1, reported: 1 });
    expect(effectCalls.provision).toBe(2);
    expect((await row(control.db, 2)).state).toBe('Issued');

    await stopControlPlane(control);
    control = await startControlPlane();

    const served = await control.client.fetchAssignments(0, signal());
    expect(served.map((w) => JSON.stringify(w))).toEqual(issuedJson);
    expect((await assignmentsAfter(control.db, HOST, 0)).map((w) => JSON.stringify(w))).toEqual(issuedJson);
    const reissued = await issueAssignment(control.db, signer, request('op-2'));
    expect(JSON.stringify(reissued.envelope)).toBe(issuedJson[1]);

    // Sequence 2 is at the host's last sequence but still unreported, so it is served again.
    const report = await host.step(signal());
    expect(report).toMatchObject({ fetched: 1, accepted: 0, replayed: 1, refused: 0 });
    expect(effectCalls.provision).toBe(2);
    const stored = await verifiedStored(control.db, 2);
    expect(canonicalJson(stored)).toBe(canonicalJson(savedResult(host.state, 2)));
    expect(await host.step(signal())).toMatchObject({ fetched: 0 });
  });

  it('refuses a forged result, over the listener and directly, and stores nothing', async () => {
    const third = await issueAssignment(control.db, signer, request('op-3'));
    expect(third.sequence).toBe(3);
    const forged = forgedResult(third.envelope, third.envelopeDigest);

    const overWire = await control.client.reportResult(forged, signal()).catch((e: unknown) => e);
    expect(overWire).toBeInstanceOf(ControlRefusedError);
    expect((overWire as ControlRefusedError).problem?.status).toBe(422);
    const keys = await loadHostResultKeys(control.db, HOST);
    const direct = await recordResult(control.db, HOST, forged, keys).catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(HostResultRefusedError);
    expect((direct as HostResultRefusedError).code).toBe('result-signature-invalid');
    expect(await row(control.db, 3)).toMatchObject({ state: 'Issued', result: null });

    // The real result is stored once; another one signed by the host's own key is a conflict.
    expect(await host.step(signal())).toMatchObject({ accepted: 1, reported: 1 });
    const stored = await verifiedStored(control.db, 3);
    const other = forgedResult(third.envelope, third.envelopeDigest, hostKey.privateKey);
    const conflict = await recordResult(control.db, HOST, other, keys).catch((e: unknown) => e);
    expect((conflict as HostResultRefusedError).code).toBe('result-conflict');
    expect(canonicalJson((await row(control.db, 3)).result)).toBe(canonicalJson(stored));

    expect((await rows(control.db)).map((r) => r.sequence)).toEqual([1, 2, 3]);
    expect(effectCalls.provision).toBe(3);
  });

  it('the table itself refuses a sequence gap, a rewritten result and a deletion', async () => {
    const gap = await control.db
      .query(
        `INSERT INTO sandbox_host_assignments
           (host_id, sequence, operation_id, operation_kind, envelope, envelope_sha256, environment_id,
            lease_operation_id, resource_generation, provider_fence, state, issued_at)
         SELECT host_id, 5, 'op-gap', operation_kind,
                jsonb_set(jsonb_set(envelope, '{body,sequence}', '5'), '{body,operation,id}', '"op-gap"'),
                repeat('a', 64), environment_id, lease_operation_id, resource_generation, provider_fence,
                'Issued', issued_at
           FROM sandbox_host_assignments WHERE host_id = $1 AND sequence = 3`,
        [HOST],
      )
      .catch((e: unknown) => e);
    expect((gap as { code?: string }).code).toBe('23503');
    const rewrite = await control.db
      .query(`UPDATE sandbox_host_assignments SET result_sha256 = repeat('b', 64) WHERE host_id = $1`, [HOST])
      .catch((e: unknown) => e);
    expect(rewrite).toBeInstanceOf(Error);
    const deletion = await control.db
      .query('DELETE FROM sandbox_host_assignments WHERE host_id = $1', [HOST])
      .catch((e: unknown) => e);
    expect(deletion).toBeInstanceOf(Error);
    expect((await rows(control.db)).map((r) => r.state)).toEqual(['Reported', 'Reported', 'Reported']);
  });
});

describe('fences and declined envelopes on the round trip', () => {
  const lease = { environmentId: 'env-fence', operationId: 'lease-fence', resourceGeneration: 1 };
  const fenced = (
    id: string,
    kind: AssignmentRequest['operation']['kind'],
    providerFence: number,
    spec: Record<string, unknown>,
  ): AssignmentRequest => ({
    ...request(id),
    operation: { id, kind },
    lease,
    fence: { providerFence },
    spec,
  });

  it('a describe with a higher fence does not lock out the lease fence; a mutating one does', async () => {
    const owner = { environmentId: lease.environmentId, operationId: lease.operationId, providerFence: 2 };
    await issueAssignment(control.db, signer, fenced('op-f1', 'provision', 2, provisionSpec(owner)));
    await issueAssignment(control.db, signer, fenced('op-f2', 'describe', 9, {}));
    const expiresAt = new Date(Date.now() + DAY).toISOString();
    const renew = await issueAssignment(control.db, signer, fenced('op-f3', 'renew', 2, { expiresAt }));
    expect(renew.replayed).toBe(false);
    await expect(issueAssignment(control.db, signer, fenced('op-f4', 'release', 1, {}))).rejects.toThrow(
      AssignmentStaleFenceError,
    );

    expect(await host.step(signal())).toMatchObject({ accepted: 3, declined: 0, refused: 0, reported: 3 });
    const renewed = await verifiedStored(control.db, renew.sequence);
    expect(renewed.body.outcome).toMatchObject({ status: 'succeeded', document: { sandbox: { expiresAt } } });
    const described = await verifiedStored(control.db, renew.sequence - 1);
    expect(described.body.outcome.document).toMatchObject({ found: true });
  });

  it('answers an envelope that expired before the host saw it with a signed refusal; nothing stalls', async () => {
    const late = await issueAssignment(control.db, signer, { ...request('op-late'), ttlMs: 1 });
    await sleep(10);
    const after = await issueAssignment(control.db, signer, request('op-after'));
    expect(await host.step(signal())).toMatchObject({ accepted: 1, declined: 1, refused: 0, reported: 2 });
    const refused = await verifiedStored(control.db, late.sequence);
    expect(refused.body.outcome).toMatchObject({
      status: 'failed',
      document: { code: 'refused', refusal: 'expired' },
    });
    expect((await verifiedStored(control.db, after.sequence)).body.outcome.status).toBe('succeeded');
    expect(await host.step(signal())).toMatchObject({ fetched: 0 });
  });
});
