// The README's "Try production mode on your machine", step by step, as child processes: `sandlot dev
// upstream` (JWKS, Projects and run-selection stand-ins) prints the settings to export; `migrate`,
// an API-only `serve` and a `worker` run in production mode on a fresh PostgreSQL schema and Redis
// under their own prefix; a provision is refused 409 network-policy-unverified until `sandlot
// network-policy register` writes the policy, then reaches Active with a token from `sandlot dev
// token`. The same register command refuses the agent-sandbox provider, whose policies are read back
// from the cluster and never from this table.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeys, redisUrl, uniquePrefix } from '../integration/workers-support.ts';
import { databaseUrlFor, repoRoot } from '../support/chaos-worker.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { runCli } from '../support/run-cli.ts';

const cli = path.join(repoRoot, 'cli', 'sandlot.mjs');
const REDIS_URL = redisUrl(0);

interface Running {
  stdout(): string;
  output(): string;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();

/** A long-running `sandlot` command, resolved once its stdout carries `ready`. */
async function start(args: string[], env: Record<string, string>, ready: RegExp): Promise<Running> {
  const child = spawn(process.execPath, [cli, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let output = '';
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      children.delete(child);
      resolve();
    }),
  );
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} not ready:\n${output}`)), 90_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      output += chunk;
      if (ready.test(stdout)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited early:\n${output}`));
    });
  });
  return {
    stdout: () => stdout,
    output: () => output,
    async stop() {
      if (children.has(child)) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The `export NAME=value` lines a command printed, as variables (values as a shell reads them). */
function exportsOf(stdout: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const match of stdout.matchAll(/^export ([A-Z_]+)='([^']*)'$/gm)) vars[match[1]!] = match[2]!;
  return vars;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Try production mode on your machine (README)', () => {
  let pg: IsolatedPostgres;
  let dir: string;
  let upstream: Running | undefined;
  let serve: Running | undefined;
  let worker: Running | undefined;
  let settings: Record<string, string>;
  let env: Record<string, string>;
  const prefix = uniquePrefix().replace('sandlot-test-', 'trial-');

  beforeAll(async () => {
    pg = await isolatedPostgres();
    dir = await mkdtemp(path.join(tmpdir(), 'sandlot-trial-'));
  }, 60_000);

  afterAll(async () => {
    for (const child of [worker, serve, upstream]) await child?.stop();
    await pg?.drop();
    await deleteKeys(REDIS_URL, prefix);
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('follows the README section, which names each command this test runs', async () => {
    const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8');
    const section = /## Try production mode on your machine\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    for (const step of [
      'npx sandlot dev upstream',
      'source .sandlot/upstream/env',
      'npx sandlot migrate',
      'npx sandlot serve --no-workers',
      'npx sandlot worker',
      'npx sandlot network-policy register --tenant acme --project checkout --generation 1 --policy',
      'npx sandlot dev token --sub alice',
      '/sandbox/provision',
    ])
      expect(section).toContain(step);
  });

  it('provisions a sandbox to Active in production mode with the stand-in upstream services', async () => {
    // 1. The stand-ins, printing the settings to export.
    upstream = await start(
      ['dev', 'upstream', '--port', '0', '--dir', path.join(dir, 'upstream'), '--tenant', 'acme'],
      {},
      /sandlot dev upstream listening on http:\/\/127\.0\.0\.1:\d+/,
    );
    settings = exportsOf(upstream.stdout());
    expect(Object.keys(settings).sort()).toEqual([
      'SANDLOT_JWKS_URL',
      'SANDLOT_JWT_AUDIENCE',
      'SANDLOT_JWT_ISSUER',
      'SANDLOT_PROJECTS_URL',
      'SANDLOT_RUN_SELECTION_URL',
    ]);
    for (const url of ['SANDLOT_JWKS_URL', 'SANDLOT_PROJECTS_URL', 'SANDLOT_RUN_SELECTION_URL'])
      expect(settings[url]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);

    // 2. Production mode: PostgreSQL and Redis, plus the exported settings.
    env = {
      ...settings,
      DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
      REDIS_URL,
      SANDLOT_BULLMQ_PREFIX: prefix,
      SANDLOT_MIGRATE_ON_START: 'false',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
    const migrated = await runCli(['migrate'], env, 120_000);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);

    serve = await start(['serve', '--port', '0', '--no-workers'], env, /sandlot listening on http:\/\/\S+/);
    worker = await start(['worker'], env, /sandlot worker running/);
    const api = /sandlot listening on (http:\/\/\S+)/.exec(serve.stdout())?.[1] ?? '';
    expect(api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // 3. A token signed with the stand-in's key.
    const minted = await runCli(['dev', 'token', '--dir', path.join(dir, 'upstream'), '--sub', 'alice'], {});
    expect(minted.stderr).toBe('');
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const call = async (method: string, urlPath: string, body?: unknown) => {
      const res = await fetch(`${api}${urlPath}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        body: (await res.json()) as Record<string, unknown>,
      };
    };
    const environments = '/api/projects/checkout/runs/run-1/environments';
    const registered = await call('POST', environments, { idempotencyKey: 'trial-1' });
    expect(registered.status).toBe(201);
    const base = `${environments}/${String(registered.body['environmentId'])}`;
    const volume = await call('POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' });
    expect(volume.status).toBe(201);
    const provision = () =>
      call('POST', `${base}/sandbox/provision`, {
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

    // Without a registered policy the gate holds, as the issue describes.
    const refused = await provision();
    expect(refused.status).toBe(409);
    expect(refused.type).toContain('application/problem+json');
    expect(String(refused.body['type'])).toContain('network-policy-unverified');

    // 4. Register the network policy through the supported command.
    const policyFile = path.join(dir, 'policy.json');
    await writeFile(
      policyFile,
      JSON.stringify({ egress: [{ toFQDNs: [{ matchName: 'registry.npmjs.org' }] }] }),
    );
    const register = ['network-policy', 'register', '--tenant', 'acme', '--project', 'checkout'];
    const written = await runCli([...register, '--generation', '1', '--policy', policyFile], env, 60_000);
    expect(written.stderr).toBe('');
    expect(written.code).toBe(0);
    expect(written.stdout).toContain('registered network policy generation 1 for acme/checkout');
    const again = await runCli([...register, '--generation', '1', '--policy', policyFile], env, 60_000);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already registered, identical');

    // 5. Provision, and see Active.
    const accepted = await provision();
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const lease = await until('the lease Active', async () => {
      const res = await call('GET', `${base}/sandbox`);
      expect(res.status).toBe(200);
      const current = res.body['lease'] as { state?: string } | undefined;
      return current?.state === 'Active' ? current : undefined;
    });
    expect(lease.state).toBe('Active');
    expect(serve.output() + worker.output()).not.toContain(token);
  }, 300_000);

  it('refuses a different policy under a registered generation, and bad input, changing nothing', async () => {
    const register = ['network-policy', 'register', '--tenant', 'acme', '--project', 'checkout'];
    const other = path.join(dir, 'other.json');
    await writeFile(other, JSON.stringify({ egress: [] }));
    const conflict = await runCli([...register, '--generation', '1', '--policy', other], env, 60_000);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain('a different policy is already registered under generation 1');
    const notJson = path.join(dir, 'not.json');
    await writeFile(notJson, '{"egress": [');
    const bad = await runCli([...register, '--generation', '2', '--policy', notJson], env, 60_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not JSON');
    const zero = await runCli([...register, '--generation', '0', '--policy', other], env, 60_000);
    expect(zero.code).toBe(2);
  }, 120_000);

  it('refuses to register for agent-sandbox, whose policies only the cluster readback verifies', async () => {
    const policyFile = path.join(dir, 'policy.json');
    const refused = await runCli(
      [
        'network-policy',
        'register',
        ...['--tenant', 'acme', '--project', 'checkout', '--generation', '2', '--policy', policyFile],
      ],
      { ...env, SANDLOT_PROVIDER: 'agent-sandbox' },
      60_000,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('CiliumNetworkPolicy');
  }, 60_000);
});
