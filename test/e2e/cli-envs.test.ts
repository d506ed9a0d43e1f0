// `sandlot envs …` and `sandlot attempts` against one embedded `sandlot serve` (a child process on a
// new data directory seeded with the tests' migrated template database), as a user runs them beside it: `sandlot demo` takes one Environment
// through provision and release over the API, a second one is registered through the API, and
// the commands list, show, read attempts, release, are refused, and reject a usage mistake, all
// with tokens minted from the shared dev key.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, runCli } from '../support/run-cli.ts';
import { seedEmbeddedDatabase } from '../support/prepared-once.ts';
import { repoRoot } from '../support/chaos-worker.ts';
import { provisionBody, type Scenario } from '../support/sandbox-flow.ts';

const LISTENING = /sandlot listening on (http:\/\/\S+:\d+) \(/;

describe('sandlot envs and attempts through the API of an embedded serve', () => {
  let dataDir: string;
  let serve: ChildProcess;
  let url: string;
  let env: Record<string, string>;
  let demoEnv: string;
  let fresh: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'sandlot-envs-'));
    await seedEmbeddedDatabase(dataDir);
    env = { SANDLOT_DATA_DIR: dataDir, HOME: process.env['HOME'] ?? dataDir };
    serve = spawn(process.execPath, [cliEntry, 'serve', '--port', '0'], {
      cwd: repoRoot,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    serve.stderr!.resume();
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      serve.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const found = LISTENING.exec(out);
        if (found?.[1] !== undefined) resolve(found[1]);
      });
      serve.once('exit', (code) => reject(new Error(`serve exited early (${code}):\n${out}`)));
    });
    const demo = await runCli(['demo', '--url', url], env, 90_000);
    expect(demo.code, demo.stderr).toBe(0);
    const run = /✓ run (\S+) selects/.exec(demo.stdout)?.[1];
    const id = /Environment (env_[a-z2-7]{32}) Registered/.exec(demo.stdout)?.[1];
    demoEnv = `demo/${run}/${id}`;
    // A second Environment of the same run, registered through the API: no lease, so it releases at once.
    const token = (await runCli(['token', '--tenant', 'demo', '--sub', 'demo-user'], env)).stdout.trim();
    const registered = await fetch(`${url}/api/projects/demo/runs/${run}/environments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ idempotencyKey: 'cli-envs' }),
    });
    expect(registered.status).toBe(201);
    fresh = `demo/${run}/${((await registered.json()) as { environmentId: string }).environmentId}`;
  }, 180_000);

  afterAll(async () => {
    serve.kill('SIGTERM');
    if (serve.exitCode === null) await new Promise((resolve) => serve.once('exit', resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('lists the project as JSON lines, and as a table', async () => {
    const listed = await runCli(['envs', 'list', '--url', url, '--project', 'demo', '--json'], env);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { environmentId: string; state: string });
    expect(rows.map((r) => r.environmentId).sort()).toEqual(
      [demoEnv, fresh].map((a) => a.split('/')[2]).sort(),
    );
    const registered = await runCli(
      ['envs', 'list', '--url', url, '--project', 'demo', '--state', 'Registered'],
      env,
    );
    expect(registered.code).toBe(0);
    expect(registered.stdout).toMatch(/^ENVIRONMENT\s+PROJECT\s+RUN\s+STATE/);
    expect(registered.stdout).toContain(fresh.split('/')[2]);
    expect(registered.stdout).not.toContain(demoEnv.split('/')[2]);
  });

  it('shows an Environment by its address or by its ID with --project, and its attempts', async () => {
    const shown = await runCli(['envs', 'show', '--url', url, demoEnv], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/state\s+Released/);
    expect(shown.stdout).toMatch(/lease\s+Released/);
    const byId = await runCli(
      ['envs', 'show', '--url', url, demoEnv.split('/')[2]!, '--project', 'demo', '--json'],
      env,
    );
    expect(byId.code, byId.stderr).toBe(0);
    expect((JSON.parse(byId.stdout) as { environment: { state: string } }).environment.state).toBe(
      'Released',
    );

    const attempts = await runCli(['attempts', '--url', url, demoEnv], env);
    expect(attempts.code, attempts.stderr).toBe(0);
    expect(attempts.stdout).toMatch(/\.provision\.1\s+provision\s+Succeeded/);
    expect(attempts.stdout).toMatch(/\.release\.\d+\s+release\s+Succeeded/);
    // history through the journal route, beside the running serve.
    const history = await runCli(['history', '--url', url, demoEnv], env);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/^REV\s+TIME\s+EVENT/);
    expect(history.stdout).toContain('environment.release');
    const unresolved = await runCli(['attempts', '--url', url, demoEnv, '--unresolved', '--json'], env);
    expect(unresolved.code).toBe(0);
    expect((JSON.parse(unresolved.stdout) as { attempts: unknown[] }).attempts).toEqual([]);
  });

  it('releases an Environment; a release under a stale generation is refused with the problem', async () => {
    const refused = await runCli(['envs', 'release', '--url', url, fresh, '--expected-generation', '9'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('HTTP 409 lifecycle-generation-mismatch');
    const released = await runCli(['envs', 'release', '--url', url, fresh], env);
    expect(released.code, released.stderr).toBe(0);
    expect(released.stdout).toContain(`${fresh.split('/')[2]} Released`);
  });

  it('abandons an Active lease, reconciles it once released, and refuses a second abandon', async () => {
    const token = (await runCli(['token', '--tenant', 'demo', '--sub', 'demo-user'], env)).stdout.trim();
    const run = demoEnv.split('/')[1]!;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const envs = `/api/projects/demo/runs/${run}/environments`;
    const registered = await post(envs, { idempotencyKey: 'cli-envs-abandon' });
    expect(registered.status).toBe(201);
    const environmentId = registered.body['environmentId'] as string;
    const base = `${envs}/${environmentId}`;
    const volume = await post(`${base}/workspace-volumes`, { idempotencyKey: 'ws-1' });
    expect(volume.status).toBe(201);
    const provision = await post(
      `${base}/sandbox/provision`,
      provisionBody({ volume: volume.body as unknown as Scenario['volume'] }),
    );
    expect(provision.status, JSON.stringify(provision.body)).toBe(202);
    // The lease as `envs show` reads it, until it is in `state` (a long-poll would do; the
    // deadline is for a busy machine, each read answers at once).
    const leaseIn = async (state: string) => {
      const until = Date.now() + 60_000;
      for (;;) {
        const shown = await runCli(
          ['envs', 'show', '--url', url, `demo/${run}/${environmentId}`, '--json'],
          env,
        );
        expect(shown.code, shown.stderr).toBe(0);
        const lease = (JSON.parse(shown.stdout) as { lease?: { state?: string } | null }).lease;
        if (lease?.state === state) return lease;
        if (Date.now() > until) throw new Error(`lease not ${state}: ${shown.stdout}`);
      }
    };
    await leaseIn('Active');
    const address = `demo/${run}/${environmentId}`;
    const abandoned = await runCli(['envs', 'abandon', '--url', url, address], env);
    expect(abandoned.code, abandoned.stderr).toBe(0);
    expect(abandoned.stdout).toMatch(
      new RegExp(`^${environmentId} lease op_[a-z2-7]{32} Releasing \\(fencing 2\\)`),
    );
    await leaseIn('Released');
    // Nothing to reconcile on a Released lease: 200, the lease as it stands.
    const reconciled = await runCli(['envs', 'reconcile', '--url', url, address, '--json'], env);
    expect(reconciled.code, reconciled.stderr).toBe(0);
    expect(JSON.parse(reconciled.stdout)).toMatchObject({ environmentId, state: 'Released' });
    // A second abandon under a new key: the lease was released under another key.
    const again = await runCli(['envs', 'abandon', '--url', url, address], env);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('HTTP 409 lease-not-abandonable');
  }, 120_000);

  it('answers a usage mistake with exit code 2 and a clear line', async () => {
    const bare = await runCli(['envs', 'show', '--url', url, 'env_nothing'], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('add --project');
    const both = await runCli(['attempts', '--url', url, demoEnv, '--token', 'x', '--token-file', 'y'], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --token or --token-file, not both');
  });
});
