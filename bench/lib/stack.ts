// Everything the HTTP benchmark runs against, started by the benchmark on 127.0.0.1: the stand-ins
// for the identity provider's JWKS (ES256), Projects and run selection (test/support/fake-services.ts,
// answering from their own maps, so they add no PostgreSQL work), a throw-away database, a unique
// BullMQ prefix on Redis, and `sandlot serve --no-workers` and `sandlot worker` as child processes
// in production mode. Children run the compiled build (`npm run build --out-dir <temp>`, then
// `node <temp>/cli/main.js`); if the build fails (someone's work in progress), or with --entry tsx
// (--quick's default), they run cli/sandlot.mjs, which loads the sources through tsx, and the
// report says so.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { allPermissions, buildHarness } from '../../test/support/harness.ts';
import { deleteKeys } from '../../test/integration/workers-support.ts';
import { repoRoot } from './root.ts';
import {
  fakeAudience,
  fakeIssuer,
  startFakeServices,
  type FakeServices,
} from '../../test/support/fake-services.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import type { BenchDatabase } from './postgres.ts';
import { isInterrupted, onInterrupt } from './interrupt.ts';
import { status } from './progress.ts';

export const TENANT = 'acme';
export const PROJECT = 'bench';
export const RUN = 'run-bench';
export const SUBJECT = 'alice';

export interface Entry {
  /** `dist` (compiled build) or `tsx` (sources through cli/sandlot.mjs). */
  kind: 'dist' | 'tsx';
  script: string;
  note: string;
  cleanup(): Promise<void>;
}

/** Builds into a temporary directory (node_modules linked beside it); falls back to the tsx entry. */
export async function prepareEntry(prefer: 'dist' | 'tsx'): Promise<Entry> {
  const tsx: Entry = {
    kind: 'tsx',
    script: join(repoRoot, 'cli', 'sandlot.mjs'),
    note: 'node cli/sandlot.mjs (sources through tsx)',
    cleanup: () => Promise.resolve(),
  };
  if (prefer === 'tsx') return tsx;
  const out = await mkdtemp(join(tmpdir(), 'sandlot-bench-dist-'));
  status(`building into ${out}`);
  // Asynchronously, so that whatever runs beside it (the peers' install) keeps reporting.
  const built = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('npm', ['run', 'build', '--', '--out-dir', out], { cwd: repoRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', (error) => resolve({ status: null, stdout, stderr: `${stderr}${error.message}` }));
    child.once('close', (code) => resolve({ status: code, stdout, stderr }));
  });
  if (built.status !== 0) {
    await rm(out, { recursive: true, force: true });
    const why = `${built.stdout}\n${built.stderr}`.trim().split('\n').slice(-5).join(' | ');
    status(`build failed, falling back to cli/sandlot.mjs: ${why}`);
    return { ...tsx, note: `${tsx.note}; the build failed: ${why}` };
  }
  // Package imports resolve upwards from the file: give the build the checkout's dependencies.
  await symlink(join(repoRoot, 'node_modules'), join(out, 'node_modules'), 'dir');
  const cleanup = () => {
    forget();
    return rm(out, { recursive: true, force: true });
  };
  const forget = onInterrupt('build directory', cleanup);
  return {
    kind: 'dist',
    script: join(out, 'cli', 'main.js'),
    note: 'node <npm run build --out-dir temp>/cli/main.js',
    cleanup,
  };
}

export interface Child {
  pid: number;
  /** The last few KiB of its output, for error messages. */
  tail(): string;
  readonly exited: boolean;
  stop(): Promise<void>;
}

/** Spawns `node <entry> <args>` with only `env` (plus PATH, HOME) and waits for `ready`. */
export async function startChild(entry: Entry, args: string[], env: Record<string, string>, ready: RegExp) {
  if (isInterrupted()) throw new Error('interrupted');
  const child: ChildProcess = spawn(process.execPath, [entry.script, ...args], {
    cwd: repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      ...(process.env['HOME'] === undefined ? {} : { HOME: process.env['HOME'] }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exited = false;
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_192);
  };
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  let match: RegExpExecArray | null = null;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args[0]} not ready in 60 s:\n${output}`));
    }, 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      keep(chunk);
      match ??= ready.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr?.on('data', keep);
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited before it was ready:\n${output}`));
    });
  });
  const handle: Child = {
    pid: child.pid ?? -1,
    tail: () => output,
    get exited() {
      return exited;
    },
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
  return { child: handle, match: match as RegExpExecArray | null };
}

export interface StackOptions {
  database: BenchDatabase;
  entry: Entry;
  redisUrl: string;
  apis: number;
  workers: number;
  logLevel: string;
  /** More environment variables for the Sandlot children (the step timeline's file). */
  extraEnv?: Record<string, string>;
}

export interface Stack {
  apiUrls: string[];
  apis: Child[];
  workers: Child[];
  fake: FakeServices;
  redisPid: number | undefined;
  /** A fresh ES256 token for the benchmark's subject (valid 10 minutes). */
  token(): Promise<string>;
  close(): Promise<void>;
}

/** Migrates, seeds the network policy, starts the stand-ins and the Sandlot processes. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const { database, entry, redisUrl } = options;
  // Migrations, the provider identity and the project's network policy, through the embedded app on
  // the same database (production mounts no admin routes; the policy registry is our own table).
  const seedDb = createPgDatabase({ connectionString: database.url, max: 2 });
  const h = await buildHarness(seedDb, { workers: false });
  const operator = await h.token(TENANT, 'ops', { operator: true });
  const identity = (await (await h.request('GET', '/admin/provider', { token: operator })).json()) as object;
  const policy = await h.request('PUT', `/admin/tenants/${TENANT}/projects/${PROJECT}/network-policies/1`, {
    token: operator,
    body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
  });
  if (policy.status !== 201 && policy.status !== 200) throw new Error(`network policy: ${policy.status}`);
  await h.close();
  await seedDb.close();

  const fake = await startFakeServices();
  fake.grant(TENANT, PROJECT, SUBJECT, allPermissions);
  fake.setSelection(TENANT, PROJECT, RUN, [{ ...identity, exclusive: true }]);
  const prefix = `bench-${Date.now().toString(36)}`;
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    SANDLOT_BULLMQ_PREFIX: prefix,
    SANDLOT_JWT_ISSUER: fakeIssuer,
    SANDLOT_JWT_AUDIENCE: fakeAudience,
    SANDLOT_JWKS_URL: fake.jwksUrl,
    SANDLOT_PROJECTS_URL: fake.projectsUrl,
    SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: options.logLevel,
    ...options.extraEnv,
  };
  const apis: Child[] = [];
  const workers: Child[] = [];
  const apiUrls: string[] = [];
  const stopAll = async () => {
    await Promise.all([...apis, ...workers].map((c) => c.stop()));
  };
  // Once only, whether the normal path, a failed start or an interruption asks first.
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      forget();
      await stopAll();
      await fake.close();
      await deleteKeys(redisUrl, prefix);
    })());
  const forget = onInterrupt('stack', close);
  // All at once (start-up is mostly each process loading its code), each kept as soon as it is
  // ready, so that a failed or interrupted start still stops every one that did start.
  const apiUrlsByIndex: string[] = [];
  const apisByIndex: Child[] = [];
  const starting = await Promise.allSettled([
    ...Array.from({ length: options.apis }, async (_, index) => {
      const { child, match } = await startChild(
        entry,
        ['serve', '--port', '0', '--no-workers'],
        env,
        /sandlot listening on (http:\/\/\S+)/,
      );
      apis.push(child);
      apisByIndex[index] = child;
      apiUrlsByIndex[index] = match?.[1] ?? '';
    }),
    ...Array.from({ length: options.workers }, async () => {
      workers.push((await startChild(entry, ['worker'], env, /sandlot worker running/)).child);
    }),
  ]);
  const failed = starting.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) {
    await close();
    throw failed.reason;
  }
  apis.splice(0, apis.length, ...apisByIndex); // apis[i] serves apiUrls[i]
  apiUrls.push(...apiUrlsByIndex);
  const redisPid = await redisProcessId(redisUrl);
  return {
    apiUrls,
    apis,
    workers,
    fake,
    redisPid,
    token: () => fake.sign({ sub: SUBJECT, tenant: TENANT }),
    close,
  };
}

/** Redis's own process ID (`INFO server`), to read its CPU time from /proc. */
export async function redisProcessId(url: string): Promise<number | undefined> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const info = await redis.info('server');
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    return Number.isInteger(pid) ? pid : undefined;
  } finally {
    redis.disconnect();
  }
}

export async function redisVersion(url: string): Promise<string> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
  } finally {
    redis.disconnect();
  }
}
