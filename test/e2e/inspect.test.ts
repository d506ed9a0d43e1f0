// The Stately inspector bridge as an operator runs it, production-like: an API-only `sandlot serve
// --no-workers --inspect <port>` and a separate `sandlot worker --inspect <port>`, both child
// processes on one PostgreSQL schema (DATABASE_URL) and Redis, send to a WebSocket listener on
// 127.0.0.1 that stands in for the inspector relay. A lifecycle driven over HTTP (register, provision,
// Active, release, Released) must reach it as inspector messages: per process, the Environment's
// registration with the machine definition before its first event, then each committed revision's
// event (with its source) and snapshot, in revision order; together, every journal row exactly once,
// http events from serve and worker events from the worker. Then `sandlot inspect` replays exactly
// the journal rows, in order, `sandlot history` prints them, and both processes stop at once on
// SIGTERM even though nobody listens any more.
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { InspectionFeed } from '../../cli/inspection.ts';
import { environmentMachine } from '../../machines/environment.ts';
import { exportMachine } from '../../machines/environment-diagram.ts';
import { readJournal, type JournalEntry } from '../../store/journal.ts';
import { deleteKeys, redisUrl, uniquePrefix } from '../integration/workers-support.ts';
import { databaseUrlFor, repoRoot } from '../support/chaos-worker.ts';
import { runCli } from '../support/run-cli.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { fakeAudience, fakeIssuer, startFakeServices, type FakeServices } from '../support/fake-services.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';

const cli = path.join(repoRoot, 'cli', 'sandlot.mjs');
const REDIS_URL = redisUrl(0);

interface Message {
  type: '@xstate.actor' | '@xstate.event' | '@xstate.snapshot';
  sessionId: string;
  name?: string;
  definition?: string;
  sourceId?: string;
  event?: { type: string; sandlot?: { revision: number; source: string | null; actor: string } };
  snapshot?: { status?: string; value?: unknown; context?: unknown };
}

/** The stand-in relay: every message, per connection, in arrival order. */
async function startListener() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const connections: Message[][] = [];
  wss.on('connection', (socket) => {
    const received: Message[] = [];
    connections.push(received);
    socket.on('message', (data: Buffer) => received.push(JSON.parse(data.toString('utf8')) as Message));
  });
  return {
    port: (wss.address() as AddressInfo).port,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}

interface Running {
  output(): string;
  readonly exited: boolean;
  /** Sends `signal` and resolves with how the process ended. */
  stop(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A long-running `sandlot` command, resolved once it printed `ready`. */
async function startProcess(args: string[], env: Record<string, string>, ready: string): Promise<Running> {
  const child: ChildProcess = spawn(process.execPath, [cli, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exited = false;
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    }),
  );
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} not ready:\n${output}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(ready)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exit.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited early (${JSON.stringify(how)}):\n${output}`));
    });
  });
  return {
    output: () => output,
    get exited() {
      return exited;
    },
    stop(signal) {
      if (!exited) child.kill(signal);
      return exit;
    },
  };
}

async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The messages about one session, and the revisions its events carry, in arrival order. */
const about = (messages: Message[], sessionId: string) => messages.filter((m) => m.sessionId === sessionId);
const revisionsOf = (messages: Message[]) =>
  messages.filter((m) => m.type === '@xstate.event').map((m) => m.event?.sandlot?.revision);

/**
 * One connection's story of an Environment: registered (with the definition) before its first event,
 * then event and snapshot in pairs, revisions strictly increasing, each as the journal has it.
 */
function expectCommitOrder(messages: Message[], journal: JournalEntry[]): void {
  expect(messages[0]?.type).toBe('@xstate.actor');
  const definition = JSON.parse(messages[0]?.definition ?? 'null') as {
    id: string;
    states: Record<string, unknown>;
  };
  expect(definition.id).toBe(environmentMachine.id);
  // Keys arrive sorted (the inspector's stable stringify).
  expect(Object.keys(definition.states).sort()).toEqual(
    Object.keys(environmentMachine.config.states ?? {}).sort(),
  );
  expect(Object.keys(definition.states)).toEqual(expect.arrayContaining(['lifecycle', 'sandbox']));
  const rest = messages.slice(1).filter((m) => m.type !== '@xstate.actor');
  expect(rest.length % 2).toBe(0);
  let previous = 0;
  for (let i = 0; i < rest.length; i += 2) {
    const [event, snapshot] = [rest[i] as Message, rest[i + 1] as Message];
    expect(event.type).toBe('@xstate.event');
    expect(snapshot.type).toBe('@xstate.snapshot');
    const revision = event.event?.sandlot?.revision ?? 0;
    expect(revision).toBeGreaterThan(previous);
    previous = revision;
    const row = journal.find((r) => r.revision === revision);
    expect(row, `revision ${revision} is journaled`).toBeDefined();
    expect(event.event?.type).toBe(row?.eventType);
    expect(event.sourceId).toBe(row?.source);
    expect(event.event?.sandlot?.source).toBe(row?.source);
    expect(snapshot.event?.sandlot?.revision).toBe(revision);
    expect(snapshot.snapshot?.value).toEqual(row?.toState);
  }
}

describe('serve --inspect and worker --inspect feed the Stately inspector', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let fake: FakeServices;
  let listener: Awaited<ReturnType<typeof startListener>>;
  let serve: Running | undefined;
  let worker: Running | undefined;
  let env: Record<string, string>;
  let apiUrl: string;
  let environmentId: string;
  let journal: JournalEntry[];
  let base: string;
  let token: string;
  const prefix = uniquePrefix().replace('sandlot-test-', 'inspect-');

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
    fake = await startFakeServices({ mirror: h });
    listener = await startListener();
    env = {
      DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
      REDIS_URL,
      SANDLOT_BULLMQ_PREFIX: prefix,
      SANDLOT_JWT_ISSUER: fakeIssuer,
      SANDLOT_JWT_AUDIENCE: fakeAudience,
      SANDLOT_JWKS_URL: fake.jwksUrl,
      SANDLOT_PROJECTS_URL: fake.projectsUrl,
      SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
      // Nothing but the lifecycle below commits: the observer would add describes of the Active lease.
      SANDLOT_OBSERVE_EVERY_MS: '3600000',
      SANDLOT_RECONCILE_EVERY_MS: '500',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
  }, 60_000);

  afterAll(async () => {
    for (const child of [serve, worker])
      if (child !== undefined && !child.exited) await child.stop('SIGKILL');
    await listener?.close();
    await fake?.close();
    await h?.close();
    await pg?.drop();
    await deleteKeys(REDIS_URL, prefix);
  });

  it('answers --help for every command, and suggests the nearest flag or command', async () => {
    const commands = [
      'serve',
      'worker',
      'migrate',
      'token',
      'demo',
      'inspect',
      'history',
      'inspector',
      'machines',
      'machines export',
      'audit',
    ];
    const results = await Promise.all(commands.map((c) => runCli([...c.split(' '), '--help'], {})));
    results.forEach((result, i) => {
      expect(result.code, commands[i]).toBe(0);
      expect(result.stdout).toContain(`Usage: sandlot ${commands[i]}`);
      expect(result.stdout).toMatch(/Examples?:\n {2}\$ .*sandlot /);
    });
    expect(results[0]?.stdout).toContain('--inspect [port|url]');
    expect(results[2 + 1]?.stdout).toContain('--tenant <tenant>');
    expect(results[9]?.stdout).toContain('"json", "mermaid", "dot"');

    const flag = await runCli(['history', 'env_x', '--jsn'], {});
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("unknown option '--jsn'");
    expect(flag.stderr).toContain('(Did you mean --json?)');
    const command = await runCli(['histroy', 'env_x'], {});
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('(Did you mean history?)');
  }, 60_000);

  it('streams every committed transition, from both processes, in revision order with its source', async () => {
    serve = await startProcess(
      ['serve', '--port', '0', '--no-workers', '--inspect', String(listener.port)],
      env,
      'sandlot listening on',
    );
    worker = await startProcess(
      ['worker', '--inspect', String(listener.port)],
      env,
      'sandlot worker running',
    );
    apiUrl = /sandlot listening on (http:\/\/\S+)/.exec(serve.output())?.[1] ?? '';
    expect(apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'alice' });
    const operator = await h.token('acme', 'ops', { operator: true });
    const policy = await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/1', {
      token: operator,
      body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
    });
    expect(policy.status).toBe(201);

    token = await fake.sign({ sub: 'alice', tenant: 'acme' });
    const call = async (method: string, urlPath: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}${urlPath}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const environments = '/api/projects/checkout/runs/run-1/environments';
    const registered = await call('POST', environments, { idempotencyKey: 'inspect-1' });
    expect(registered.status).toBe(201);
    environmentId = String(registered.body['environmentId']);
    base = `${environments}/${environmentId}`;
    const volume = await call('POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' });
    expect(volume.status).toBe(201);
    const provisioned = await call('POST', `${base}/sandbox/provision`, {
      idempotencyKey: 'prov-1',
      workspace: {
        volumeId: volume.body['volumeId'],
        resourceGeneration: volume.body['resourceGeneration'],
        dataGeneration: volume.body['dataGeneration'],
        mountPath: '/workspace',
        readOnly: false,
      },
      networkPolicyGeneration: 1,
    });
    expect(provisioned.status).toBe(202);
    // Read from the table, not GET /sandbox: an inspection would describe the lease in serve.
    await poll('the lease to be Active', async () => {
      const { rows } = await h.db.query<{ state: string }>(
        'SELECT state FROM sandbox_leases WHERE environment_id = $1',
        [environmentId],
      );
      return rows[0]?.state === 'Active' ? true : undefined;
    });
    const released = await call('POST', `${base}/release`, {
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'release-1',
    });
    expect([200, 202]).toContain(released.status);
    await poll('the Environment to be Released', async () => {
      const lifecycle = await call('GET', `${base}/lifecycle`);
      return lifecycle.body['state'] === 'Released' ? true : undefined;
    });

    journal = await readJournal(h.db, environmentId);
    const sources = new Set(journal.map((r) => r.source));
    expect(sources).toContain('http');
    expect(sources).toContain('worker');
    expect(journal.map((r) => r.revision)).toEqual(journal.map((_, i) => i + 1));

    // Everything journaled reaches the relay, exactly once over both connections.
    // (Read together until they agree: a late commit may still be on its way.)
    await poll('every revision at the relay', async () => {
      journal = await readJournal(h.db, environmentId);
      const all = listener.connections.flatMap((c) => revisionsOf(about(c, environmentId)));
      return all.length === journal.length ? true : undefined;
    });
    const perConnection = listener.connections
      .map((messages) => about(messages, environmentId))
      .filter((messages) => messages.length > 0);
    expect(perConnection).toHaveLength(2);
    for (const messages of perConnection) expectCommitOrder(messages, journal);
    const all = perConnection.flatMap(revisionsOf).sort((a, b) => (a ?? 0) - (b ?? 0));
    expect(all).toEqual(journal.map((r) => r.revision));

    // Serve (API only) sent the http events; the worker the attempt runner's (and the reconciler's).
    const sourcesOf = (messages: Message[]) =>
      new Set(messages.filter((m) => m.type === '@xstate.event').map((m) => m.sourceId));
    const [fromServe, fromWorker] = [...perConnection].sort((a) => (sourcesOf(a).has('http') ? -1 : 1));
    expect([...sourcesOf(fromServe ?? [])]).toEqual(['http']);
    expect(sourcesOf(fromWorker ?? []).has('worker')).toBe(true);
    expect(sourcesOf(fromWorker ?? []).has('http')).toBe(false);
    // Sources are registered as actors of their own, so the sequence view names the sender.
    const registered2 = listener.connections.flat().filter((m) => m.type === '@xstate.actor');
    expect(registered2.map((m) => m.sessionId)).toEqual(expect.arrayContaining(['http', 'worker']));
    // The snapshots carry the context without provider options.
    const snapshots = perConnection.flat().filter((m) => m.type === '@xstate.snapshot');
    expect(JSON.stringify(snapshots)).not.toContain('"providerOptions":{');
    expect(snapshots.at(-1)?.snapshot?.context).toMatchObject({ environmentId });
  }, 120_000);

  /** Runs `sandlot inspect` with `args` and checks it replayed exactly the journal rows, in order. */
  async function expectReplay(args: string[]) {
    const before = listener.connections.length;
    const result = await runCli(
      ['inspect', ...args, '--url', `ws://127.0.0.1:${listener.port}`],
      env,
      60_000,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`replayed ${journal.length} journal rows of ${environmentId}`);
    const replayed = about(listener.connections[before] ?? [], `${environmentId} (journal)`);
    expect(replayed[0]).toMatchObject({ type: '@xstate.actor', name: `${environmentId} (journal)` });
    const events = replayed.filter((m) => m.type === '@xstate.event');
    expect(events.map((m) => [m.event?.sandlot?.revision, m.event?.type, m.sourceId])).toEqual(
      journal.map((r) => [r.revision, r.eventType, r.source]),
    );
    const snapshots = replayed.filter((m) => m.type === '@xstate.snapshot');
    expect(snapshots.map((m) => m.snapshot?.value)).toEqual(journal.map((r) => r.toState));
    expectCommitOrder(replayed, journal);
  }

  it('replays exactly the journal rows, in order, with `sandlot inspect`', async () => {
    await expectReplay([environmentId]);
  }, 90_000);

  it('replays the same rows read through the running server with `sandlot inspect --server`', async () => {
    // <project>/<run>/<environmentId>, from the route's path.
    const address = base.replace(/^\/api\/projects\/([^/]+)\/runs\/([^/]+)\/environments\//, '$1/$2/');
    await expectReplay([address, '--server', apiUrl, '--token', token]);
    // A bare env_… needs --project to be found through the API: a usage error, exit code 2.
    const bare = await runCli(['inspect', environmentId, '--server', apiUrl, '--token', token], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('add --project');
  }, 90_000);

  it('prints the journal as a table, and as JSON equal to the journal route, with `sandlot history`', async () => {
    const table = await runCli(['history', environmentId], env);
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^REV\s+TIME\s+EVENT\s+SOURCE\s+STATES \(lifecycle\/sandbox\/cleanup\/commands\/workspace\) FROM → TO\s+FENCES$/,
    );
    expect(lines).toHaveLength(journal.length + 1);
    journal.forEach((row, i) => {
      const line = lines[i + 1] ?? '';
      expect(line).toMatch(new RegExp(`^\\s*${row.revision}\\s+\\d{4}-\\d\\d-\\d\\dT`));
      expect(line).toContain(row.eventType);
      expect(line).toContain(` ${row.source} `);
    });
    expect(table.stdout).toMatch(
      /sandbox\.provision\s+http\s+Registered\/NoLease\/\w+\/\w+\/\w+ → Registered\/Provisioning\/\w+\/\w+\/\w+\n/,
    );
    expect(table.stdout).toMatch(
      /provider\.succeeded \(provision\)\s+worker\s+.* → Registered\/Active\/\w+\/\w+\/\w+\s+rg 1 pf 1 fg 1\n/,
    );
    expect(table.stdout).toMatch(/environment\.release\s+http\s+.*lg 1\n/);

    const json = await runCli(['history', environmentId, '--json'], env);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as Record<string, unknown>[];
    const route = await fetch(`${apiUrl}${base}/journal`, { headers: { authorization: `Bearer ${token}` } });
    expect(route.status).toBe(200);
    const { entries } = (await route.json()) as { entries: Record<string, unknown>[] };
    expect(
      rows.map(({ revision, event, source, from, to, recordedAt }) => ({
        revision,
        event,
        source,
        from,
        to,
        recordedAt,
      })),
    ).toEqual(
      entries.map(({ revision, event, source, from, to, recordedAt }) => ({
        revision,
        event,
        source,
        from,
        to,
        recordedAt,
      })),
    );

    const missing = await runCli(['history', 'env_nosuchenvironment'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no Environment env_nosuchenvironment');
  }, 60_000);

  it('stops both processes at once on SIGTERM when nobody listens any more', async () => {
    await listener.close();
    const started = Date.now();
    const [a, b] = await Promise.all([serve!.stop('SIGTERM'), worker!.stop('SIGTERM')]);
    expect(a).toEqual({ code: 0, signal: null });
    expect(b).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);
});

describe('the inspection feed never waits on the inspector', () => {
  it('queues commits while nobody listens, drops and counts the oldest, and closes at once', async () => {
    // A port nothing listens on: the feed keeps trying in the background, unref'd.
    const feed = new InspectionFeed({ url: 'ws://127.0.0.1:9', machine: environmentMachine, maxQueued: 100 });
    const started = performance.now();
    for (let revision = 1; revision <= 10_000; revision++) {
      feed.push({
        environmentId: 'env_x',
        revision,
        event: { type: 'sandbox.describe' },
        source: 'http',
        actor: 'alice',
        fromState: { lifecycle: 'Registered', sandbox: 'Active' },
        toState: { lifecycle: 'Registered', sandbox: 'Active' },
        snapshot: null,
      });
    }
    expect(performance.now() - started).toBeLessThan(200);
    expect(feed.stats()).toMatchObject({ connected: false, sent: 0, dropped: 9_900, queued: 100 });
    const closing = performance.now();
    await feed.close();
    expect(performance.now() - closing).toBeLessThan(100);
  });
});

describe('sandlot machines export', () => {
  it('prints what exportMachine generates from the machine, in each format', async () => {
    for (const format of ['json', 'mermaid', 'dot'] as const) {
      const result = await runCli(['machines', 'export', '--format', format], {});
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout.trimEnd()).toBe(exportMachine(format).trimEnd());
    }
    const json = JSON.parse((await runCli(['machines', 'export'], {})).stdout) as { id: string };
    expect(json.id).toBe(environmentMachine.id);
  }, 60_000);
});
