// The E2 and E6 flows on SANDLOT_PROVIDER=sandbox-host through the real composition and real
// processes: the trust and two enrollments written to a fresh embedded data directory before any
// serve opens it (`sandlot hosts list` reads them back), `sandlot serve` with its mutual-TLS control
// listener in one child process, and two `sandlot host run --config` daemons connecting from
// 127.0.0.2 and 127.0.0.3 in two more (their guests declared at-start). E2: provision to Active over
// HTTP, ready for dispatch once the host-signed describe says configured, release, with the sandbox
// record on exactly one host and gone after. E6: the daemon holding a lease is SIGKILLed; the
// release stays unsettled while it is dead, and completes once the daemon is started again over
// the same journal (its dead lock taken over) with the record gone.
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../cli/context.ts';
import { seedEmbeddedDatabase } from '../support/prepared-once.ts';
import { enrollHostFromFile, trustHosts } from '../../cli/hosts.ts';
import { migrateFor } from '../../cli/migrations.ts';
import { loadConfig } from '../../config/load.ts';
import { loadOrCreateDevKey } from '../../http/auth/dev-key.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { repoRoot } from '../support/chaos-worker.ts';
import { cliEntry, runCli } from '../support/run-cli.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';

const NAME = 'host-control.sandlot.test';
const DAY = 86_400_000;
/** The workers' provider call deadline in serve: a dead host is noticed within it. */
const CALL_TIMEOUT_MS = 1_500;
const SERVE_LINE = /sandlot listening on http:\/\/(\S+):(\d+) \(embedded\)/;
const CONTROL_LINE = /host control listening on (\S+):(\d+) \(mTLS\)/;
const PROJECT = 'checkout';
const admin = `/admin/tenants/acme/projects/${PROJECT}`;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
}

interface Daemon {
  hostId: string;
  localAddress: string;
  config: string;
  journalDir: string;
  sandboxesDir: string;
  proc?: Proc | undefined;
}

const running = new Set<ChildProcess>();

/** Starts `node cli/sandlot.mjs <args>` with only PATH, HOME and the given variables. */
function start(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [cliEntry, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits for `pattern` on the process's stdout; fails early, with both streams, if it exits. */
async function lineOf(proc: Proc, pattern: RegExp, ms = 40_000): Promise<RegExpExecArray> {
  let exit: Exit | undefined;
  void proc.exited.then((e) => (exit = e));
  return until(
    `${String(pattern)}`,
    () => {
      if (exit !== undefined) {
        throw new Error(`exited early (${JSON.stringify(exit)}):\n${proc.stdout()}${proc.stderr()}`);
      }
      return pattern.exec(proc.stdout()) ?? undefined;
    },
    ms,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\nstdout: ${proc.stdout()}\nstderr: ${proc.stderr()}`);
  });
}

async function stop(proc: Proc | undefined, ms = 15_000): Promise<Exit | undefined> {
  if (proc === undefined) return undefined;
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), ms);
  const exit = await proc.exited;
  clearTimeout(timer);
  return exit;
}

describe('sandlot serve with SANDLOT_PROVIDER=sandbox-host and two `sandlot host run` daemons', () => {
  let dir: string;
  let dataDir: string;
  let serve: Proc | undefined;
  let baseUrl: string;
  let operator: string;
  let alice: string;
  const files: Record<string, string> = {};
  const daemons: Daemon[] = [
    { hostId: 'host-a', localAddress: '127.0.0.2', config: '', journalDir: '', sandboxesDir: '' },
    { hostId: 'host-b', localAddress: '127.0.0.3', config: '', journalDir: '', sandboxesDir: '' },
  ];

  async function call(method: string, path: string, token: string, body?: unknown) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      signal: AbortSignal.timeout(10_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  function startDaemon(daemon: Daemon): Proc {
    daemon.proc = start(['host', 'run', '--config', daemon.config, '--health-every', '100'], {});
    return daemon.proc;
  }

  /** A healthy poll means the daemon reached the listener over mutual TLS and found nothing to do. */
  const healthy = (proc: Proc) =>
    until(`a healthy poll`, () => (proc.stderr().includes('"lastHealthyPoll":"') ? true : undefined)).catch(
      (error: Error) => {
        throw new Error(`${error.message}\nstdout: ${proc.stdout()}\nstderr: ${proc.stderr()}`);
      },
    );

  const records = async (daemon: Daemon) =>
    (await readdir(daemon.sandboxesDir).catch(() => [])).filter((name) => name.endsWith('.json'));
  const holderOf = (resourceId: unknown) =>
    daemons.find((d) => typeof resourceId === 'string' && resourceId.startsWith(`${d.hostId}/`));

  /** Registers an Environment with its Workspace under a fresh run selecting the provider. */
  async function environment(run: string) {
    const provider = await call('GET', '/admin/provider', operator);
    expect(provider.body).toMatchObject({
      providerId: 'sandbox-host',
      hostingPattern: 'enrolled-host-fleet',
    });
    const selection = await call('PUT', `${admin}/runs/${run}/selection`, operator, {
      candidates: [{ ...provider.body, exclusive: true }],
    });
    expect(selection.status).toBe(201);
    const environments = `/api/projects/${PROJECT}/runs/${run}/environments`;
    const registered = await call('POST', environments, alice, { idempotencyKey: `env-${run}` });
    expect(registered.status).toBe(201);
    const base = `${environments}/${String(registered.body['environmentId'])}`;
    const volume = await call('POST', `${base}/workspace-volumes`, alice, { idempotencyKey: `ws-${run}` });
    expect([200, 201]).toContain(volume.status);
    return { base, volume: volume.body };
  }

  async function provision(env: Awaited<ReturnType<typeof environment>>) {
    const { volumeId, resourceGeneration, dataGeneration } = env.volume;
    const res = await call('POST', `${env.base}/sandbox/provision`, alice, {
      idempotencyKey: 'provision-1',
      workspace: { volumeId, resourceGeneration, dataGeneration, mountPath: '/workspace', readOnly: false },
      networkPolicyGeneration: 1,
    });
    expect(res.status).toBe(202);
  }

  async function lease(base: string): Promise<Record<string, unknown>> {
    const res = await call('GET', `${base}/sandbox`, alice);
    expect(res.status).toBe(200);
    return res.body['lease'] as Record<string, unknown>;
  }

  const leaseIn = (base: string, state: string, ms = 30_000) =>
    until(
      `the lease ${state}`,
      async () => {
        const l = await lease(base);
        return l['state'] === state ? l : undefined;
      },
      ms,
    );

  async function release(base: string) {
    const res = await call('POST', `${base}/release`, alice, {
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'release-1',
    });
    expect(res.status).toBe(202);
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandlot-host-serve-'));
    dataDir = join(dir, 'data');
    await seedEmbeddedDatabase(dataDir);
    const hostsCa = await createTestCertificateAuthority('sandbox-hosts-ca');
    const serverCa = await createTestCertificateAuthority('host-control-server-ca');
    const server = await serverCa.issue([NAME]);
    const controlKey = generateKeyPairSync('ed25519');
    const pem = (k: KeyObject, type: 'pkcs8' | 'spki') => k.export({ type, format: 'pem' }).toString();
    const write = async (name: string, text: string) => {
      files[name] = join(dir, name);
      await writeFile(files[name], text, { mode: 0o600 });
      return files[name];
    };
    await write('server-ca.pem', serverCa.caPem);
    await write('hosts-ca.pem', hostsCa.caPem);
    await write('server.cert.pem', server.certPem);
    await write('server.key.pem', server.keyPem);
    await write('control.key.pem', pem(controlKey.privateKey, 'pkcs8'));
    await write('control.pub.pem', pem(controlKey.publicKey, 'spki'));
    const notBefore = new Date(Date.now() - DAY).toISOString();
    const notAfter = new Date(Date.now() + 30 * DAY).toISOString();

    const config = loadConfig({ SANDLOT_DATA_DIR: dataDir, SANDLOT_PROVIDER: 'sandbox-host' });
    const db = await openDatabase(config);
    try {
      await migrateFor(db, config);
      const out = () => undefined;
      await trustHosts(
        { publicKey: files['control.pub.pem'] ?? '', version: '1', notBefore, notAfter, epoch: '1' },
        { db, out },
      );
      for (const d of daemons) {
        const client = await hostsCa.issueClient(d.hostId);
        const resultKey = generateKeyPairSync('ed25519');
        const evidence = await write(
          `${d.hostId}.evidence.json`,
          JSON.stringify({
            hostId: d.hostId,
            certificatePem: client.certPem,
            resultPublicKeyPem: pem(resultKey.publicKey, 'spki'),
          }),
        );
        await enrollHostFromFile({ evidence }, { db, out });
        d.journalDir = join(dir, d.hostId, 'journal');
        d.sandboxesDir = join(dir, d.hostId, 'sandboxes');
        await mkdir(d.sandboxesDir, { recursive: true });
        const declaration = {
          hostId: d.hostId,
          journalDir: d.journalDir,
          sandboxesDir: d.sandboxesDir,
          control: {
            url: `https://${NAME}:PORT`,
            address: '127.0.0.1',
            localAddress: d.localAddress,
            caFile: files['server-ca.pem'],
          },
          clientCertFile: await write(`${d.hostId}.cert.pem`, client.certPem),
          clientKeyFile: await write(`${d.hostId}.key.pem`, client.keyPem),
          resultKey: {
            file: await write(`${d.hostId}.result.pem`, pem(resultKey.privateKey, 'pkcs8')),
            version: 1,
          },
          trust: {
            current: { publicKeyFile: files['control.pub.pem'], version: 1, notBefore, notAfter },
            revocationEpoch: 1,
          },
          // The reference guest reports configured once its sandbox is recorded.
          guest: { configured: 'at-start' },
          pollIntervalMs: 50,
        };
        d.config = JSON.stringify(declaration);
      }
    } finally {
      await db.close();
    }

    // The operator's view, through the CLI, of what serve will open.
    const listed = await runCli(['hosts', 'list', '--json'], { SANDLOT_DATA_DIR: dataDir });
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    const hosts = JSON.parse(listed.stdout) as Array<{ hostId: string; state: string }>;
    expect(hosts.map((h) => [h.hostId, h.state])).toEqual([
      ['host-a', 'Enrolled'],
      ['host-b', 'Enrolled'],
    ]);

    serve = start(['serve', '--port', '0'], {
      SANDLOT_DATA_DIR: dataDir,
      SANDLOT_PROVIDER: 'sandbox-host',
      SANDLOT_HOST_CONTROL_LISTEN: '127.0.0.1:0',
      SANDLOT_HOST_CONTROL_CERT_FILE: files['server.cert.pem'] ?? '',
      SANDLOT_HOST_CONTROL_KEY_FILE: files['server.key.pem'] ?? '',
      SANDLOT_HOST_CLIENT_CA_FILE: files['hosts-ca.pem'] ?? '',
      SANDLOT_HOST_SIGNING_KEY_FILE: files['control.key.pem'] ?? '',
      SANDLOT_HOST_SIGNING_KEY_VERSION: '1',
      SANDLOT_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
      SANDLOT_OBSERVE_EVERY_MS: '200',
      SANDLOT_RECONCILE_EVERY_MS: '300',
      LOG_LEVEL: 'warn',
    });
    const [, host, port] = await lineOf(serve, SERVE_LINE);
    baseUrl = `http://${host}:${port}`;
    const [, controlHost, controlPort] = await lineOf(serve, CONTROL_LINE);
    expect(controlHost).toBe('127.0.0.1');

    for (const d of daemons) {
      d.config = await write(`${d.hostId}.json`, d.config.replace(':PORT', `:${controlPort}`));
      startDaemon(d);
    }
    for (const d of daemons) await healthy(d.proc!);
    // The listener's signing key is the persisted trust's current key: no warning at start.
    expect(serve.stderr()).not.toContain('hosts will refuse');

    const key = await loadOrCreateDevKey(dataDir);
    const mint = (subject: string, isOperator: boolean) =>
      mintDevToken({
        key,
        issuer: config.auth.issuer,
        audience: config.auth.audience,
        tenant: 'acme',
        subject,
        operator: isOperator,
        ttlSeconds: 15 * 60,
      });
    operator = await mint('ops', true);
    alice = await mint('alice', false);
    const grant = await call('PUT', `${admin}/grants/alice`, operator, {
      permissions: ['ReadProjects', 'WriteProjects', 'ReadRunSelection'],
    });
    expect(grant.status).toBe(200);
    const policy = await call('PUT', `${admin}/network-policies/1`, operator, {
      policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] },
    });
    expect([200, 201]).toContain(policy.status);
  }, 60_000);

  afterAll(async () => {
    for (const d of daemons) await stop(d.proc).catch(() => undefined);
    await stop(serve).catch(() => undefined);
    for (const child of running) child.kill('SIGKILL');
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('E2: provisions to Active on one host, is ready for dispatch, and releases with the record gone', async () => {
    const env = await environment('run-e2');
    await provision(env);
    const active = await leaseIn(env.base, 'Active');
    const holder = holderOf(active['resourceId']);
    expect(holder, `resourceId ${String(active['resourceId'])}`).toBeDefined();
    expect(await records(holder!)).toHaveLength(1);
    for (const other of daemons) if (other !== holder) expect(await records(other)).toEqual([]);

    const view = await until('ready for dispatch', async () => {
      const res = await call('GET', `${env.base}/sandbox?networkPolicyGeneration=1`, alice);
      return res.body['readyForDispatch'] === true ? res.body : undefined;
    });
    const conditions = view['conditions'] as Array<{ type: string; status: string; reason: string }>;
    const reasons = Object.fromEntries(conditions.map((c) => [c.type, [c.status, c.reason]]));
    // Ready from the host-signed describe's configured phase, the daemon's declared guest's report.
    expect(view['phase']).toBe('configured');
    expect(reasons['HostConfigured']).toEqual(['True', 'Configured']);
    expect(reasons['NetworkPolicyVerified']).toEqual(['True', 'NotApplicable']);

    await release(env.base);
    await leaseIn(env.base, 'Released');
    for (const d of daemons) expect(await records(d)).toEqual([]);
  }, 40_000);

  it('E6: a SIGKILLed host leaves the release unsettled; restarted over its journal, it completes', async () => {
    const env = await environment('run-e6');
    await provision(env);
    const active = await leaseIn(env.base, 'Active');
    const holder = holderOf(active['resourceId'])!;
    expect(holder).toBeDefined();
    expect(await records(holder)).toHaveLength(1);

    const killed = holder.proc!;
    killed.child.kill('SIGKILL');
    expect(await killed.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // The dead daemon's lock names its pid; a restart must take it over.
    expect(await readFile(join(holder.journalDir, 'host.lock'), 'utf8')).toBe(`${killed.child.pid}\n`);

    await release(env.base);
    // Several call deadlines pass: a silent host never makes the lease Released.
    await new Promise((resolve) => setTimeout(resolve, 3 * CALL_TIMEOUT_MS));
    expect((await lease(env.base))['state']).not.toBe('Released');
    expect(await records(holder)).toHaveLength(1);

    const restarted = startDaemon(holder);
    await leaseIn(env.base, 'Released').catch((error: Error) => {
      throw new Error(`${error.message}\nhost stderr: ${restarted.stderr()}`);
    });
    expect(await records(holder)).toEqual([]);
    expect(restarted.stderr()).not.toContain('HostJournalLockedError');
  }, 50_000);

  it('stops serve and both daemons on SIGTERM with exit code 0', async () => {
    for (const d of daemons) expect(await stop(d.proc)).toEqual({ code: 0, signal: null });
    expect(await stop(serve)).toEqual({ code: 0, signal: null });
    serve = undefined;
    for (const d of daemons) {
      expect(d.proc?.stdout()).toContain('sandlot host stopped');
      d.proc = undefined;
    }
  }, 30_000);
});
