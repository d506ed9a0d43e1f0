// The sandbox-host commands and composition, with certificates and keys made at test start: the
// host declaration refused field by field, `hosts trust`/`enroll`/`list` against PostgreSQL, the
// reference host daemon polling a control listener the test starts (one lock per journal, a clean
// stop on abort and on SIGTERM, a clear failure when the control plane stays away), the operator
// cleanup refusing an operation that is not quarantined, and SANDLOT_PROVIDER=sandbox-host
// composed with its listener (every bad setting named, no key material in any message).
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupHost, runHost } from '../../cli/host.ts';
import { HostDeclarationError } from '../../cli/host-declaration.ts';
import { EnrollmentRefusedError, enrollHostFromFile, listHosts, trustHosts } from '../../cli/hosts.ts';
import { composeSandlot } from '../../cli/compose.ts';
import { seedEmbeddedDatabase } from '../support/prepared-once.ts';
import { loadConfig } from '../../config/load.ts';
import { controlHandlersFor, issueAssignment } from '../../providers/sandbox-host/assignments.ts';
import { createPgHostCertificateDirectory } from '../../providers/sandbox-host/certificate-rotation.ts';
import { type ControlListener, startControlListener } from '../../providers/sandbox-host/control-listener.ts';
import { CleanupRefusedError, HostJournalLockedError } from '../../providers/sandbox-host/host-errors.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { cliEntry, runCli } from '../support/run-cli.ts';
import { repoRoot } from '../support/chaos-worker.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';

const HOST = 'host-cli-1';
const NAME = 'control.sandlot.test';
const DAY = 86_400_000;
const silent = pino({ level: 'silent' });

let iso: IsolatedPostgres;
let db: Database;
let dir: string;
let listener: ControlListener;
const files: Record<string, string> = {};
const controlKey = generateKeyPairSync('ed25519');
const hostKey = generateKeyPairSync('ed25519');
const notBefore = new Date(Date.now() - DAY).toISOString();
const notAfter = new Date(Date.now() + 30 * DAY).toISOString();
const secrets: string[] = [];

function collectingLogger(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const text: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    logger: pino({ level: 'info' }, stream),
    lines: () =>
      text
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

function declaration(overrides: Record<string, unknown> = {}, port = listener.port) {
  return {
    hostId: HOST,
    journalDir: join(dir, 'journal'),
    sandboxesDir: join(dir, 'sandboxes'),
    control: { url: `https://${NAME}:${port}`, address: '127.0.0.1', caFile: files['serverCa'] },
    clientCertFile: files['hostCert'],
    clientKeyFile: files['hostKey'],
    resultKey: { file: files['resultKey'], version: 1 },
    trust: {
      current: { publicKeyFile: files['controlPub'], version: 1, notBefore, notAfter },
      revocationEpoch: 1,
    },
    pollIntervalMs: 20,
    ...overrides,
  };
}

async function writeDeclaration(name: string, document: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(document));
  return path;
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const outInto = (sink: string[]) => (text: string) => void sink.push(text);

beforeAll(async () => {
  iso = await isolatedPostgres();
  db = iso.open();
  await migrate(db);
  dir = await mkdtemp(join(tmpdir(), 'sandlot-cli-host-'));
  const hostsCa = await createTestCertificateAuthority('sandbox-hosts-ca');
  const serverCa = await createTestCertificateAuthority('host-control-server-ca');
  const server = await serverCa.issue([NAME]);
  const client = await hostsCa.issueClient(HOST);
  const pem = (k: { export(o: object): string | Buffer }, type: 'pkcs8' | 'spki') =>
    k.export({ type, format: 'pem' }).toString();
  const material: Record<string, string> = {
    serverCa: serverCa.caPem,
    hostsCa: hostsCa.caPem,
    serverCert: server.certPem,
    serverKey: server.keyPem,
    hostCert: client.certPem,
    hostKey: client.keyPem,
    resultKey: pem(hostKey.privateKey, 'pkcs8'),
    controlKey: pem(controlKey.privateKey, 'pkcs8'),
    controlPub: pem(controlKey.publicKey, 'spki'),
    evidence: JSON.stringify({
      hostId: HOST,
      certificatePem: client.certPem,
      resultPublicKeyPem: pem(hostKey.publicKey, 'spki'),
    }),
    badEvidence: JSON.stringify({ hostId: HOST }),
  };
  for (const [name, text] of Object.entries(material)) {
    files[name] = join(dir, `${name}.pem`);
    await writeFile(files[name], text, { mode: 0o600 });
  }
  secrets.push(server.keyPem, client.keyPem, material['resultKey'] ?? '', material['controlKey'] ?? '');
  listener = await startControlListener({
    host: '127.0.0.1',
    port: 0,
    certPem: server.certPem,
    keyPem: server.keyPem,
    clientCaPem: hostsCa.caPem,
    directory: createPgHostCertificateDirectory(db),
    handlers: controlHandlersFor(db),
  });
}, 60_000);

afterAll(async () => {
  await listener?.close().catch(() => undefined);
  await iso?.drop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const noSecrets = (text: string) => {
  expect(text).not.toContain('PRIVATE KEY');
  for (const secret of secrets) expect(text).not.toContain(secret.slice(40, 100));
};

describe('sandlot host run: the declaration', () => {
  it('refuses a bad declaration, naming each field at fault', async () => {
    const rest: Record<string, unknown> = declaration();
    delete rest['pollIntervalMs'];
    const path = await writeDeclaration('bad.json', {
      ...rest,
      extra: true,
      control: { url: 'not a url', caFile: files['serverCa'] },
      resultKey: { file: files['resultKey'], version: 0 },
      guest: { configured: 'when-started' },
    });
    const error = await runHost({ config: path, signal: AbortSignal.timeout(5_000), logger: silent }).catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(HostDeclarationError);
    const message = (error as Error).message;
    expect(message).toContain('pollIntervalMs');
    expect(message).toContain('unknown field(s) extra');
    expect(message).toContain('control.url');
    expect(message).toContain('resultKey.version');
    expect(message).toContain('guest.configured');
  });

  it('names an unreadable file and a key of the wrong kind by field, never their contents', async () => {
    const path = await writeDeclaration(
      'files.json',
      declaration({
        clientKeyFile: join(dir, 'missing.pem'),
        resultKey: { file: files['hostKey'], version: 1 },
      }),
    );
    const error = await runHost({ config: path, signal: AbortSignal.timeout(5_000), logger: silent }).catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(HostDeclarationError);
    const message = (error as Error).message;
    expect(message).toContain('clientKeyFile: cannot read the file (ENOENT)');
    expect(message).toContain('resultKey.file: expected an Ed25519 private key');
    noSecrets(message);
  });

  it('refuses a control.localAddress that is not an IP address', async () => {
    const base = declaration();
    const path = await writeDeclaration(
      'local-address.json',
      declaration({ control: { ...base.control, localAddress: 'host.example' } }),
    );
    const error = await runHost({ config: path, signal: AbortSignal.timeout(5_000), logger: silent }).catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(HostDeclarationError);
    expect((error as Error).message).toMatch(/control: .*localAddress must be an IP address/);
  });

  it('exits 1 from the CLI with the field named, and prints help', async () => {
    const path = await writeDeclaration('cli-bad.json', { hostId: HOST });
    const bad = await runCli(['host', 'run', '--config', path], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('sandlot host run: invalid host declaration');
    expect(bad.stderr).toContain('journalDir');
    const help = await runCli(['hosts', 'trust', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--next-public-key');
  }, 30_000);
});

describe('sandlot hosts trust, enroll and list', () => {
  it('sets the trust, enrolls through the local-unsafe profile, and lists the host', async () => {
    const out: string[] = [];
    const trust = await trustHosts(
      {
        publicKey: files['controlPub'] ?? '',
        version: '1',
        notBefore,
        notAfter,
        epoch: '1',
      },
      { db, out: outInto(out) },
    );
    expect(trust.current.version).toBe(1);
    expect(out.join('')).toContain('current: version 1');
    noSecrets(out.join(''));

    await expect(
      trustHosts(
        {
          publicKey: files['controlPub'] ?? '',
          version: '1',
          notBefore,
          notAfter,
          epoch: '1',
          nextVersion: '2',
        },
        { db, out: outInto([]) },
      ),
    ).rejects.toThrow(/go together/);

    const enrolled: string[] = [];
    const result = await enrollHostFromFile(
      { evidence: files['evidence'] ?? '' },
      { db, out: outInto(enrolled) },
    );
    expect(result).toMatchObject({ outcome: 'accepted', hostId: HOST });
    const text = enrolled.join('');
    expect(text).toContain(`host: ${HOST}`);
    expect(text).toContain(`evidence sha256: ${result.evidenceSha256}`);
    expect(text).toContain('NOT hardware attestation');
    noSecrets(text);

    const refused = await enrollHostFromFile(
      { evidence: files['badEvidence'] ?? '' },
      { db, out: outInto([]) },
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EnrollmentRefusedError);
    expect((refused as Error).message).toContain('evidence-malformed');

    const listed: string[] = [];
    const hosts = await listHosts({}, { db, out: outInto(listed) });
    expect(hosts).toHaveLength(1);
    expect(hosts[0]).toMatchObject({ hostId: HOST, state: 'Enrolled' });
    expect(hosts[0]?.certificates.map((c) => [c.generation, c.state])).toEqual([[1, 'Current']]);
    expect(listed.join('')).toMatch(new RegExp(`${HOST}\\s+Enrolled.*1:Current`));
  });
});

describe('sandlot host run: the daemon', () => {
  it('polls healthily, runs an issued assignment, holds its journal lock, and stops on abort', async () => {
    const path = await writeDeclaration('host.json', declaration());
    const { logger, lines } = collectingLogger();
    const controller = new AbortController();
    const out: string[] = [];
    const running = runHost({
      config: path,
      signal: controller.signal,
      logger,
      healthEveryMs: 30,
      out: outInto(out),
    });
    try {
      await until(() =>
        lines().find((l) => l['msg'] === 'host health' && l['lastHealthyPoll'] !== null) ? true : undefined,
      );
      expect(out.join('')).toContain(`sandlot host ${HOST} polling https://${NAME}:${listener.port}`);

      const issued = await issueAssignment(
        db,
        { version: 1, privateKey: controlKey.privateKey },
        {
          hostId: HOST,
          tenantId: 'tenant-1',
          principal: { subject: 'user:alice' },
          operation: { id: 'op-1', kind: 'provision' },
          lease: { environmentId: 'env-1', operationId: 'lease-1', resourceGeneration: 1 },
          fence: { providerFence: 1 },
          spec: { image: 'sandbox:1' },
          capabilities: { capabilities: ['process'] },
          ttlMs: 600_000,
        },
      );
      expect(issued.sequence).toBe(1);
      await until(async () => {
        const { rows } = await db.query<{ state: string }>(
          'SELECT state FROM sandbox_host_assignments WHERE host_id = $1 AND sequence = 1',
          [HOST],
        );
        return rows[0]?.state === 'Reported' ? true : undefined;
      });

      // One process per journal: a second daemon and an operator cleanup are both refused.
      await expect(
        runHost({ config: path, signal: controller.signal, logger: silent }),
      ).rejects.toBeInstanceOf(HostJournalLockedError);
      await expect(
        cleanupHost({ config: path, operation: 'op-1', operator: 'alice', out: outInto([]) }),
      ).rejects.toBeInstanceOf(HostJournalLockedError);
    } finally {
      controller.abort();
    }
    await running;
    const stopped = lines().find((l) => l['msg'] === 'host stopped');
    expect(stopped).toMatchObject({ hostId: HOST, lastSequence: 1, stopped: false });
    noSecrets(JSON.stringify(lines()));
  }, 30_000);

  it('cleanup refuses an operation that is not quarantined, once the daemon has stopped', async () => {
    const path = join(dir, 'host.json');
    const error = await cleanupHost({
      config: path,
      operation: 'op-unknown',
      operator: 'alice',
      out: outInto([]),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CleanupRefusedError);
    expect((error as Error).message).toContain('op-unknown is not quarantined');
    await expect(
      cleanupHost({ config: join(dir, 'host.json'), operation: 'op-1', operator: ' ', out: outInto([]) }),
    ).rejects.toThrow(/--operator/);
  });

  it('fails with a clear message when the control plane stays unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const path = await writeDeclaration(
      'away.json',
      declaration(
        {
          journalDir: join(dir, 'journal-away'),
          retry: { attempts: 2, initialBackoffMs: 5, maxBackoffMs: 5 },
        },
        port,
      ),
    );
    const { logger, lines } = collectingLogger();
    const error = await runHost({
      config: path,
      signal: AbortSignal.timeout(10_000),
      logger,
      out: outInto([]),
    }).catch((e: unknown) => e as Error);
    expect((error as Error).message).toMatch(/still unavailable after 2 attempts; is the control plane at/);
    expect(lines().filter((l) => l['msg'] === 'host poll error')).toHaveLength(2);
  }, 20_000);

  it('runs as `sandlot host run` and stops cleanly on SIGTERM', async () => {
    // The same journal as the in-process daemon: a fresh one would run sequence 1 a second time.
    const path = join(dir, 'host.json');
    const child = spawn(
      process.execPath,
      [cliEntry, 'host', 'run', '--config', path, '--health-every', '50'],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await until(() => (stderr.includes('"lastHealthyPoll":"') ? true : undefined), 20_000).catch(() => {
        throw new Error(`no healthy poll; stderr: ${stderr}`);
      });
      expect(stdout).toContain(`sandlot host ${HOST} polling`);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stdout).toContain('sandlot host stopped');
      expect(stderr).toContain('"msg":"host stopped"');
      noSecrets(stdout + stderr);
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);
});

describe('composition with SANDLOT_PROVIDER=sandbox-host', () => {
  it('refuses to start naming every missing sandbox-host setting, and starts the listener when they are good', async () => {
    const base = { SANDLOT_DATA_DIR: join(dir, 'embedded'), SANDLOT_PROVIDER: 'sandbox-host' };
    await seedEmbeddedDatabase(base.SANDLOT_DATA_DIR);
    const bad = {
      ...base,
      SANDLOT_HOST_CONTROL_LISTEN: 'nowhere',
      SANDLOT_HOST_SIGNING_KEY_FILE: files['hostKey'],
    };
    const error = await composeSandlot(loadConfig(bad), silent, {
      workers: false,
      env: bad,
      hostControl: true,
    }).catch((e: unknown) => e as Error);
    const message = (error as Error).message;
    for (const variable of [
      'SANDLOT_HOST_CONTROL_LISTEN',
      'SANDLOT_HOST_CONTROL_CERT_FILE',
      'SANDLOT_HOST_CONTROL_KEY_FILE',
      'SANDLOT_HOST_CLIENT_CA_FILE',
      'SANDLOT_HOST_SIGNING_KEY_FILE: expected an Ed25519 private key',
      'SANDLOT_HOST_SIGNING_KEY_VERSION',
    ]) {
      expect(message).toContain(variable);
    }
    noSecrets(message);

    const good = {
      ...base,
      SANDLOT_HOST_CONTROL_LISTEN: '127.0.0.1:0',
      SANDLOT_HOST_CONTROL_CERT_FILE: files['serverCert'] ?? '',
      SANDLOT_HOST_CONTROL_KEY_FILE: files['serverKey'] ?? '',
      SANDLOT_HOST_CLIENT_CA_FILE: files['hostsCa'] ?? '',
      SANDLOT_HOST_SIGNING_KEY_FILE: files['controlKey'] ?? '',
      SANDLOT_HOST_SIGNING_KEY_VERSION: '1',
    };
    const sandlot = await composeSandlot(loadConfig(good), silent, {
      workers: false,
      env: good,
      hostControl: true,
    });
    try {
      expect(sandlot.provider.identity.providerId).toBe('sandbox-host');
      expect(sandlot.hostControl?.port).toBeGreaterThan(0);
    } finally {
      await sandlot.close();
    }
    const apiOnly = await composeSandlot(loadConfig(good), silent, { workers: false, env: good });
    expect(apiOnly.hostControl).toBeNull();
    await apiOnly.close();
  }, 60_000);
});
