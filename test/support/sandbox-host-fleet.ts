// A sandbox-host fleet for tests: the control listener on 127.0.0.1 over mutual TLS, and reference
// hosts enrolled with the local-unsafe verifier, each connecting from its own loopback address
// (127.0.0.2, 127.0.0.3, …) and polling on its own. Certificates and keys are made when the fleet
// starts; nothing is read from disk but the hosts' own journals and sandbox records. Each host's
// guest is declared `on-report` unless told otherwise: a test says when a guest is configured.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlHandlersFor } from '../../providers/sandbox-host/assignments.ts';
import { createPgHostCertificateDirectory } from '../../providers/sandbox-host/certificate-rotation.ts';
import { ControlClient } from '../../providers/sandbox-host/control-client.ts';
import { type ControlListener, startControlListener } from '../../providers/sandbox-host/control-listener.ts';
import { enrollHost } from '../../providers/sandbox-host/enrollment.ts';
import {
  createLocalRecordEffects,
  type HostEffects,
  sandboxRecordSchema,
} from '../../providers/sandbox-host/host-effects.ts';
import {
  createReferenceGuest,
  type GuestMode,
  reportGuestConfigured,
} from '../../providers/sandbox-host/host-guest.ts';
import { createLocalUnsafeVerifier } from '../../providers/sandbox-host/local-unsafe-verifier.ts';
import { leaseKey, SandboxHostProvider } from '../../providers/sandbox-host/provider.ts';
import { type ControlPort, ReferenceHost } from '../../providers/sandbox-host/reference-host.ts';
import { replaceTrustDurably } from '../../providers/sandbox-host/trust-store.ts';
import { createTrust, type VerificationKey } from '../../providers/sandbox-host/trust.ts';
import type { OwnerBinding } from '../../providers/provider.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { type ClientCertificate, createTestCertificateAuthority } from './tls-certificates.ts';

const CONTROL_NAME = 'host-control.sandlot.test';
const DAY = 86_400_000;

/** One reference host of the fleet, with levers a test pulls. */
export interface FleetHost {
  readonly hostId: string;
  /** The loopback address it connects from. */
  readonly address: string;
  readonly journalDir: string;
  readonly sandboxesDir: string;
  /** Why the last poll loop ended on its own (a refusal, a stopped journal), or null. */
  readonly loopError: unknown;
  /** The running daemon, or null while stopped. */
  readonly host: ReferenceHost | null;
  /** How many effects of each kind this host ran (across restarts). */
  readonly effects: Record<string, number>;
  /** The next effect of `kind` "crashes" the host right after its intent is journaled. */
  crashAfterNextIntent(kind: string): void;
  /** The client certificate the host was enrolled with (generation 1). */
  readonly enrolledCertificate: ClientCertificate;
  /** A new client certificate for this host from the fleet's CA (not registered anywhere yet). */
  issueCertificate(): Promise<ClientCertificate>;
  /** From now on the host authenticates with this certificate (a rotation on the host's side). */
  presentCertificate(certificate: ClientCertificate): void;
  /** Stops polling and closes the journal (a dead host; its journal and records stay). */
  stop(): Promise<void>;
  /** Opens the journal again (recovery runs) and resumes polling. */
  start(): Promise<void>;
  /** The guest of the lease's sandbox on this host reports its configuration complete. */
  configureGuest(owner: Pick<OwnerBinding, 'environmentId' | 'operationId'>): Promise<void>;
  /** The expiry this host's record for a lease holds (null: none, undefined: no record). */
  recordedExpiry(
    owner: Pick<OwnerBinding, 'environmentId' | 'operationId'>,
  ): Promise<string | null | undefined>;
}

export interface HostFleet {
  readonly db: Database;
  readonly provider: SandboxHostProvider;
  readonly hosts: readonly FleetHost[];
  readonly listener: ControlListener;
  readonly controlSigner: { version: number; privateKey: KeyObject };
  close(): Promise<void>;
}

export interface FleetOptions {
  /** The control plane's database (migrated here); the fleet never closes it. */
  db: Database;
  hosts?: number;
  pollIntervalMs?: number;
  /** Prefix of host ids (default `host`): `host-1`, `host-2`, … */
  prefix?: string;
  /** The hosts' declared guest (default `on-report`: configured only through configureGuest). */
  guest?: GuestMode;
}

class CrashAfterIntent extends Error {
  constructor() {
    super('simulated host crash after its intent was journaled');
  }
}

export async function startHostFleet(options: FleetOptions): Promise<HostFleet> {
  const { db, hosts: count = 2, pollIntervalMs = 10, prefix = 'host', guest = 'on-report' } = options;
  await migrate(db);
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-fleet-'));
  const hostsCa = await createTestCertificateAuthority('sandbox-hosts-ca');
  const serverCa = await createTestCertificateAuthority('host-control-server-ca');
  const serverCert = await serverCa.issue([CONTROL_NAME]);

  const controlKey = generateKeyPairSync('ed25519');
  const now = Date.now();
  const verificationKey: VerificationKey = {
    version: 1,
    publicKey: controlKey.publicKey,
    notBefore: new Date(now - DAY).toISOString(),
    notAfter: new Date(now + 30 * DAY).toISOString(),
  };
  await replaceTrustDurably(db, { current: verificationKey, next: null, revocationEpoch: 1 });
  const controlSigner = { version: 1, privateKey: controlKey.privateKey };

  const listener = await startControlListener({
    host: '127.0.0.1',
    port: 0,
    certPem: serverCert.certPem,
    keyPem: serverCert.keyPem,
    clientCaPem: hostsCa.caPem,
    directory: createPgHostCertificateDirectory(db),
    handlers: controlHandlersFor(db),
  });

  const fleet: FleetHost[] = [];
  for (let i = 1; i <= count; i++) {
    const hostId = `${prefix}-${i}`;
    const certificate = await hostsCa.issueClient(hostId);
    const resultKey = generateKeyPairSync('ed25519');
    const evidence = new TextEncoder().encode(
      JSON.stringify({
        hostId,
        certificatePem: certificate.certPem,
        resultPublicKeyPem: resultKey.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      }),
    );
    const enrolled = await enrollHost(db, evidence, createLocalUnsafeVerifier());
    if (enrolled.outcome !== 'accepted') throw new Error(`host ${hostId} was not enrolled`);
    fleet.push(
      fleetHost({
        hostId,
        address: `127.0.0.${i + 1}`,
        dir: join(dir, hostId),
        certificate,
        resultKey: resultKey.privateKey,
        serverCaPem: serverCa.caPem,
        port: listener.port,
        trust: verificationKey,
        pollIntervalMs,
        guest,
        issueCertificate: (id) => hostsCa.issueClient(id),
      }),
    );
  }
  for (const host of fleet) await host.start();

  const provider = new SandboxHostProvider({
    db,
    signer: controlSigner,
    optionsRevision: 'fleet-r1',
    resultPollMs: 10,
  });
  return {
    db,
    provider,
    hosts: fleet,
    listener,
    controlSigner,
    async close() {
      for (const host of fleet) await host.stop().catch(() => undefined);
      await listener.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface HostSetup {
  hostId: string;
  address: string;
  dir: string;
  certificate: ClientCertificate;
  resultKey: KeyObject;
  serverCaPem: string;
  port: number;
  trust: VerificationKey;
  pollIntervalMs: number;
  guest: GuestMode;
  issueCertificate(hostId: string): Promise<ClientCertificate>;
}

function fleetHost(setup: HostSetup): FleetHost {
  const journalDir = join(setup.dir, 'journal');
  const sandboxesDir = join(setup.dir, 'sandboxes');
  const counts: Record<string, number> = {};
  const crashKinds = new Set<string>();
  let loopError: unknown = null;
  let running: { host: ReferenceHost; abort: AbortController; loop: Promise<void> } | null = null;

  const clientWith = (certificate: ClientCertificate) =>
    new ControlClient({
      baseUrl: `https://${CONTROL_NAME}:${setup.port}`,
      hostId: setup.hostId,
      certPem: certificate.certPem,
      keyPem: certificate.keyPem,
      caPem: setup.serverCaPem,
      timeoutMs: 5_000,
      address: '127.0.0.1',
      localAddress: setup.address,
    });
  let client = clientWith(setup.certificate);
  // The kind of each envelope served, by sequence, for the crash lever.
  const kinds = new Map<number, string>();
  const control: ControlPort = {
    async fetchAssignments(after, signal) {
      const wires = await client.fetchAssignments(after, signal);
      for (const wire of wires) {
        const body = (wire as { body?: { sequence?: unknown; operation?: { kind?: unknown } } }).body;
        if (typeof body?.sequence === 'number' && typeof body.operation?.kind === 'string') {
          kinds.set(body.sequence, body.operation.kind);
        }
      }
      return wires;
    },
    reportResult: (wire, signal) => client.reportResult(wire, signal),
  };
  const now = () => new Date();
  const inner = createLocalRecordEffects(
    sandboxesDir,
    now,
    createReferenceGuest(sandboxesDir, setup.guest, now),
  );
  const count = (kind: keyof HostEffects) => {
    counts[kind] = (counts[kind] ?? 0) + 1;
  };
  const effects: HostEffects = {
    provision: (body) => (count('provision'), inner.provision(body)),
    describe: (body) => (count('describe'), inner.describe(body)),
    renew: (body) => (count('renew'), inner.renew(body)),
    release: (body) => (count('release'), inner.release(body)),
    listOwned: (body) => (count('listOwned'), inner.listOwned(body)),
  };

  /** The host's record of a lease, or undefined when it has none. */
  const readRecord = async (owner: Pick<OwnerBinding, 'environmentId' | 'operationId'>) => {
    try {
      return sandboxRecordSchema.parse(
        JSON.parse(await readFile(join(sandboxesDir, `${leaseKey(owner)}.json`), 'utf8')),
      );
    } catch {
      return undefined;
    }
  };

  const self: FleetHost = {
    hostId: setup.hostId,
    address: setup.address,
    journalDir,
    sandboxesDir,
    get host() {
      return running?.host ?? null;
    },
    get loopError() {
      return loopError;
    },
    effects: counts,
    crashAfterNextIntent(kind) {
      crashKinds.add(kind);
    },
    enrolledCertificate: setup.certificate,
    issueCertificate: () => setup.issueCertificate(setup.hostId),
    presentCertificate(certificate) {
      client = clientWith(certificate);
    },
    async start() {
      if (running !== null) return;
      const abort = new AbortController();
      const host = await ReferenceHost.open({
        hostId: setup.hostId,
        journalDir,
        trust: createTrust({ current: setup.trust, next: null, revocationEpoch: 1 }),
        signer: { hostId: setup.hostId, version: 1, privateKey: setup.resultKey },
        control,
        effects,
        now: () => new Date(),
        faults: {
          afterIntent: (sequence) => {
            const kind = kinds.get(sequence);
            if (kind !== undefined && crashKinds.delete(kind)) throw new CrashAfterIntent();
          },
        },
      });
      const loop = host
        .run(abort.signal, {
          intervalMs: setup.pollIntervalMs,
          attempts: 1_000,
          initialBackoffMs: 20,
          maxBackoffMs: 200,
        })
        .catch((error: unknown) => {
          loopError = error;
        });
      loopError = null;
      running = { host, abort, loop };
    },
    async stop() {
      const current = running;
      if (current === null) return;
      running = null;
      current.abort.abort();
      await current.loop;
      await current.host.close().catch(() => undefined);
    },
    async configureGuest(owner) {
      const record = await readRecord(owner);
      if (record === undefined)
        throw new Error(`host ${setup.hostId} has no sandbox for ${owner.operationId}`);
      await reportGuestConfigured(sandboxesDir, record, now());
    },
    async recordedExpiry(owner) {
      return (await readRecord(owner))?.expiresAt;
    },
  };
  return self;
}
