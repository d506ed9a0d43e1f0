// `sandlot demo` as a user runs it: `sandlot serve --port 0` in a child process on a new data
// directory (given the tests' migrated template database, see test/support/prepared-once.ts; the
// very first start is cli-serve.test.ts's), then `sandlot demo --url …` in another process sharing
// that directory (for the dev key). It must take one lease from provision to Released and exit 0; against a server that is not
// running it must say so and exit 1. With --build-test (and a server with a BuildTest profile) it
// also runs one version 2 command on the lease through capture, acknowledgment and cleanup. With
// --suspend-resume it suspends the lease and resumes it on a new one, verified by the same tree hash.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profileDocument } from '../support/build-test-profile.ts';
import { seedEmbeddedDatabase } from '../support/prepared-once.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const cli = path.join(repoRoot, 'cli', 'sandlot.mjs');
const LISTENING = /sandlot listening on http:\/\/(\S+):(\d+) \((\w+)\)/;

/** Only what node needs: no DATABASE_URL (embedded mode) and nothing else from the test's own env. */
function cliEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { SANDLOT_DATA_DIR: dataDir, ...extra };
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'SYSTEMROOT']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  children.add(child);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
}

async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Finished> {
  const child = spawn(process.execPath, [cli, ...args], { cwd: repoRoot, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exit = await exitOf(child);
  clearTimeout(timer);
  return { ...exit, stdout, stderr };
}

async function startServe(
  dataDir: string,
  extra: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0'], {
    cwd: repoRoot,
    env: cliEnv(dataDir, { LOG_LEVEL: 'warn', ...extra }),
    stdio: 'pipe',
  });
  const exited = exitOf(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`serve printed no listening line:\n${stdout}${stderr}`)),
      60_000,
    );
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const found = LISTENING.exec(stdout);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`serve exited early (${JSON.stringify(exit)}):\n${stdout}${stderr}`));
    });
  });
  return { child, url: `http://${match[1]}:${match[2]}`, exited };
}

describe('sandlot demo against a running embedded serve', () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServe>> | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'sandlot-demo-'));
    await seedEmbeddedDatabase(dataDir);
    server = await startServe(dataDir);
  }, 90_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'takes one lease from provision to Released and prints the attempts timeline',
    { timeout: 90_000 },
    async () => {
      const result = await runCli(['demo', '--url', server!.url], cliEnv(dataDir));
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const out = result.stdout;
      expect(out).toContain(`sandlot demo against ${server!.url}`);
      expect(out).toMatch(/✓ lease Active on sim-[0-9a-f]+/);
      expect(out).toContain('readyForDispatch true in phase configured');
      expect(out).toContain('HostConfigured True');
      expect(out).toMatch(
        /✓ placement: sim-[0-9a-f]+ at https:\/\/sim-[0-9a-f]+\.sim\.invalid, lease revision \d+/,
      );
      expect(out).toMatch(/✓ Environment Released \(revision \d+\), lease Released/);
      // Not a terminal: plain lines, no cursor control.
      expect(out).not.toContain('\r');
      expect(out).not.toContain('\x1b[');
      // The timeline: the provision attempt opened before it was dispatched and resolved, then the release.
      const lines = out.split('\n');
      const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
      const opened = at(/provision\.1\s+opened/);
      expect(opened).toBeGreaterThan(0);
      expect(at(/provision\.1\s+dispatched/)).toBeGreaterThan(opened);
      expect(at(/provision\.1\s+resolved\s+Succeeded/)).toBeGreaterThan(at(/provision\.1\s+dispatched/));
      expect(at(/release\.\d+\s+resolved\s+Succeeded/)).toBeGreaterThan(at(/provision\.1\s+resolved/));

      // A second run uses a fresh run ID, so it is a new Environment and succeeds again.
      const again = await runCli(['demo', '--url', server!.url], cliEnv(dataDir));
      expect(again.code).toBe(0);
      const environment = (text: string) => /Environment (env_[a-z2-7]{32}) Registered/.exec(text)?.[1];
      expect(environment(again.stdout)).toBeDefined();
      expect(environment(again.stdout)).not.toBe(environment(out));
    },
  );

  it(
    'with --suspend-resume flushes, releases, resumes on a new lease and verifies the same tree hash',
    { timeout: 90_000 },
    async () => {
      const result = await runCli(['demo', '--url', server!.url, '--suspend-resume'], cliEnv(dataDir));
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const out = result.stdout;
      expect(out).toMatch(
        /✓ resolved: storage embedded \S+, transition revision 2, data generation 1 → next 2/,
      );
      const flushed = /✓ flush wf_[0-9a-f]+ Verified: tree ([0-9a-f]{12})…/.exec(out)?.[1];
      expect(flushed).toBeDefined();
      expect(out).toMatch(/data generation 1 → 2, host receipt sha256 [0-9a-f]{12}…/);
      expect(out).toMatch(/✓ placement Released: lease op_\S+; Workspace Available at data generation 2/);
      expect(out).toMatch(
        /✓ Prepared: lease op_\S+ on sim-\S+, lifecycle generation 1 → 2, network generation 1 → 2, Workspace Attached at data generation 2/,
      );
      expect(out).toContain(`✓ verified: the new Host hashes ${flushed}…`);
      expect(out).toContain("equal to the flush receipt's tree hash");
      expect(out).toMatch(/✓ bootstrapped: attempt 1 \(rba_[0-9a-f]{32}\) Activated after 1 delivery/);
      expect(out).toMatch(/recovery NativeCache \(cache [0-9a-f]{12}…, the flushed one\)/);
      expect(out).toMatch(/✓ Environment Released \(revision \d+\), lease Released/);
      // No bearer token is ever printed (a JWT starts with eyJ).
      expect(out).not.toContain('eyJ');
    },
  );

  it('says no server answers, and exits 1, when none runs at --url', { timeout: 60_000 }, async () => {
    const url = server!.url;
    server!.child.kill('SIGTERM');
    await server!.exited;
    server = undefined;
    const result = await runCli(['demo', '--url', url], cliEnv(dataDir));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`no Sandlot server answers at ${url}`);
    expect(result.stderr).toContain('sandlot serve');
  });

  it('exits 2 on a --url that is not an http URL', async () => {
    const result = await runCli(['demo', '--url', 'ftp://example'], cliEnv(dataDir));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--url');
  });
});

describe('sandlot demo --build-test', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let server: Awaited<ReturnType<typeof startServe>> | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'sandlot-demo-bt-'));
    await seedEmbeddedDatabase(dataDir);
    const file = path.join(dataDir, 'build-test-profile.json');
    await writeFile(file, JSON.stringify(profileDocument(['/usr/bin/npm'], ['v2'])));
    env = { SANDLOT_BUILDTEST_PROFILE_FILE: file };
    server = await startServe(dataDir, env);
  }, 90_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'runs a version 2 command on the lease: capture, acknowledgment, cleanup, 410',
    { timeout: 90_000 },
    async () => {
      const result = await runCli(['demo', '--url', server!.url, '--build-test'], cliEnv(dataDir, env));
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const out = result.stdout;
      expect(out).toMatch(/✓ command reserved \(HTTP 202, replay false\)/);
      expect(out).toMatch(/✓ Succeeded: command Pod \S+ exited 0, collector Pod \S+ sealed \d+ bytes/);
      expect(out).toMatch(/✓ capture: AWSCAPT2, \d+ bytes, sha256 [0-9a-f]{12}… matches/);
      expect(out).toMatch(/added\s+dist\/app\.js/);
      expect(out).toContain('acknowledgment verified by Core and saved');
      expect(out).toContain('the capture now answers 410');
      expect(out).toMatch(/✓ Environment Released/);
    },
  );

  it('says what to set, and exits 1, when the demo has no profile', { timeout: 90_000 }, async () => {
    const result = await runCli(['demo', '--url', server!.url, '--build-test'], cliEnv(dataDir));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SANDLOT_BUILDTEST_PROFILE_FILE');
  });
});
