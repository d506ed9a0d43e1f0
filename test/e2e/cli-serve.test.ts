// The real `sandlot` command as a user runs it: `serve` in a child process (embedded mode, PGlite in a
// fresh data directory), tokens minted by a second `sandlot token` process while it runs, and the
// README's flow over real HTTP. Then a graceful stop and a restart on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const cli = path.join(repoRoot, 'cli', 'sandlot.mjs');
const LISTENING = /sandlot listening on http:\/\/(\S+):(\d+) \((\w+)\)/;

/** Only what node needs: no DATABASE_URL (embedded mode) and nothing else from the test's own env. */
function cliEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'SYSTEMROOT'] as const;
  const env: NodeJS.ProcessEnv = { SANDLOT_DATA_DIR: dataDir, ...extra };
  for (const name of keep) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Finished extends Exit {
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

function track(child: ChildProcess): Promise<Exit> {
  children.add(child);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
}

/** Runs a one-shot `sandlot` command to completion. */
async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<Finished> {
  const child = spawn(process.execPath, [cli, ...args], { cwd: repoRoot, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exit = await track(child);
  clearTimeout(timer);
  return { ...exit, stdout, stderr };
}

async function mintToken(dataDir: string, tenant: string, sub: string, admin = false): Promise<string> {
  const result = await runCli(
    ['token', '--tenant', tenant, '--sub', sub, ...(admin ? ['--admin'] : [])],
    cliEnv(dataDir),
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const token = result.stdout.trim();
  expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  return token;
}

interface Server {
  child: ChildProcess;
  url: string;
  port: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
}

/** Starts `sandlot serve --port 0` and resolves once it prints its listening line. */
async function startServe(dataDir: string, timeoutMs = 60_000): Promise<Server> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0'], {
    cwd: repoRoot,
    env: cliEnv(dataDir, { LOG_LEVEL: 'warn' }),
    stdio: 'pipe',
  });
  const exited = track(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const listening = new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`serve did not print its listening line within ${timeoutMs} ms:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = LISTENING.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`serve exited early (${JSON.stringify(exit)}):\n${stdout}${stderr}`));
    });
  });
  const [, host, port, mode] = await listening;
  expect(mode).toBe('embedded');
  return {
    child,
    url: `http://${host}:${port}`,
    port: Number(port),
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
  };
}

async function stopServe(server: Server, timeoutMs = 15_000): Promise<Exit & { ms: number }> {
  const started = Date.now();
  server.child.kill('SIGTERM');
  const exit = await Promise.race([
    server.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`serve did not exit within ${timeoutMs} ms of SIGTERM`)), timeoutMs),
    ),
  ]);
  return { ...exit, ms: Date.now() - started };
}

async function call(
  server: Server,
  method: string,
  urlPath: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${server.url}${urlPath}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

describe('sandlot serve as a child process (embedded)', () => {
  let dataDir: string;
  let server: Server | undefined;
  let alice: string;
  let environmentId: string;
  let registered: Record<string, unknown>;
  const environments = '/api/projects/checkout/runs/run-1/environments';

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'sandlot-e2e-'));
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('listens on the real port when given --port 0', { timeout: 60_000 }, async () => {
    const s = (server = await startServe(dataDir));
    expect(s.port).toBeGreaterThan(0);
    expect(s.url).toBe(`http://127.0.0.1:${s.port}`);
    await expect.poll(() => s.stdout()).toContain(`data in ${dataDir}`);
    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(200);
  });

  it('follows the README flow with tokens minted by `sandlot token` while serve runs', async () => {
    const s = server!;
    const [operator, aliceToken] = await Promise.all([
      mintToken(dataDir, 'acme', 'ops', true),
      mintToken(dataDir, 'acme', 'alice'),
    ]);
    alice = aliceToken;

    const grant = await call(s, 'PUT', '/admin/tenants/acme/projects/checkout/grants/alice', operator, {
      permissions: ['ReadProjects', 'WriteProjects', 'ReadRunSelection'],
    });
    expect(grant.status).toBe(200);
    expect(grant.body).toEqual({
      tenantId: 'acme',
      projectId: 'checkout',
      subject: 'alice',
      permissions: ['ReadProjects', 'ReadRunSelection', 'WriteProjects'],
    });

    const provider = await call(s, 'GET', '/admin/provider', operator);
    expect(provider.status).toBe(200);
    expect(provider.body).toMatchObject({ providerId: 'simulated', optionsRevision: '1' });

    // The candidate exactly as the README writes it.
    const candidate = {
      providerId: 'simulated',
      adapterVersion: '1.0.0',
      optionsSchemaVersion: 1,
      optionsRevision: '1',
      hostingPattern: 'in-process',
      capabilities: ['pvc-attachment', 'vm-isolation'],
      exclusive: true,
    };
    expect({ ...provider.body, exclusive: true }).toEqual(candidate);
    const selection = await call(
      s,
      'PUT',
      '/admin/tenants/acme/projects/checkout/runs/run-1/selection',
      operator,
      {
        candidates: [candidate],
      },
    );
    expect(selection.status).toBe(201);
    expect(selection.body).toMatchObject({ runId: 'run-1', candidates: [candidate] });

    const first = await call(s, 'POST', environments, alice, { idempotencyKey: 'first' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      tenantId: 'acme',
      projectId: 'checkout',
      runId: 'run-1',
      lifecycleGeneration: 1,
      state: 'Registered',
      revision: 1,
    });
    environmentId = first.body['environmentId'] as string;
    expect(environmentId).toMatch(/^env_[a-z2-7]{32}$/);
    expect(first.headers.get('location')).toBe(`${environments}/${environmentId}/lifecycle`);

    const again = await call(s, 'POST', environments, alice, { idempotencyKey: 'first' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    const read = await call(s, 'GET', `${environments}/${environmentId}/lifecycle`, alice);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(first.body);

    const release = await call(s, 'POST', `${environments}/${environmentId}/release`, alice, {
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'release-1',
    });
    expect(release.status).toBe(200);
    expect(release.body).toMatchObject({
      environmentId,
      state: 'Released',
      lifecycleGeneration: 1,
      revision: 2,
    });
    registered = release.body;
  });

  it('refuses to open the embedded database for `sandlot history` while serve has it open', async () => {
    const result = await runCli(['history', environmentId], cliEnv(dataDir));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`sandlot serve (pid ${server!.child.pid}) has the embedded database`);
    expect(result.stdout).toBe('');
  });

  it(
    'stops on SIGTERM with exit code 0 and keeps its data and dev key across a restart',
    {
      timeout: 60_000,
    },
    async () => {
      const key = await readFile(path.join(dataDir, 'dev-signing-key'), 'utf8');
      const stopped = await stopServe(server!);
      expect(stopped).toMatchObject({ code: 0, signal: null });
      // Well inside the 25 s shutdown grace period: it closed the server and the database itself.
      expect(stopped.ms).toBeLessThan(9_000);

      server = await startServe(dataDir);
      expect(await readFile(path.join(dataDir, 'dev-signing-key'), 'utf8')).toBe(key);
      // A token minted before the restart still verifies: same key, same Environment.
      const read = await call(server, 'GET', `${environments}/${environmentId}/lifecycle`, alice);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(registered);
      const replay = await call(server, 'POST', environments, alice, { idempotencyKey: 'first' });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(registered);

      const second = await stopServe(server);
      expect(second.code).toBe(0);
      server = undefined;
    },
  );

  it('prints the journal with its sources once serve stopped (`sandlot history`)', async () => {
    const result = await runCli(['history', environmentId], cliEnv(dataDir));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^\s*1\s+\S+\s+xstate\.init\s+http\s+- → Registered\//);
    expect(lines[2]).toMatch(
      /^\s*2\s+\S+\s+environment\.release\s+http\s+Registered\/.* → Released\/.*lg 1$/,
    );
  });

  it('exits 1 naming PORT when PORT is not a number', async () => {
    const result = await runCli(['serve'], cliEnv(dataDir, { PORT: 'abc' }));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/PORT/);
    expect(result.stdout).not.toContain('sandlot listening');
  });

  it('exits 2 when `sandlot token` lacks --tenant', async () => {
    const result = await runCli(['token', '--sub', 'alice'], cliEnv(dataDir));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--tenant');
    expect(result.stdout).toBe('');
  });

  it('exits 2 for an API-only serve or a worker in embedded mode, where this process is the only worker', async () => {
    const serve = await runCli(['serve', '--no-workers'], cliEnv(dataDir));
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('--no-workers needs DATABASE_URL');
    const worker = await runCli(['worker'], cliEnv(dataDir));
    expect(worker.code).toBe(2);
    expect(worker.stderr).toContain('needs DATABASE_URL');
  });

  it('exits 2 on an unknown command', async () => {
    const result = await runCli(['nope'], cliEnv(dataDir));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown command 'nope'");
    expect(result.stderr).toContain('Usage: sandlot');
  });
});
