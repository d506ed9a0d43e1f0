// Authority cost per lifecycle, side by side: the same in-process production-mode stack (JWKS ES256
// tokens, the HTTP Projects and run-selection clients, real PostgreSQL, in-process workers) run
// from several source trees in alternation — the working tree and copies of it with the authority
// changes taken back to the committed HEAD, cumulatively — and for each: upstream calls per
// lifecycle (Projects, run selection, JWKS), token verifications, and the stack process's CPU ms per
// lifecycle (process.cpuUsage; the stand-in services run in this parent process, not counted).
// Never part of `npm test`; see bench/README.md.
//
//   npx tsx bench/authority.ts            # BENCH_LIFECYCLES (60), BENCH_CLIENTS (4), BENCH_ROUNDS (2)
//
// Lifecycle: register → Workspace volume → provision → GET sandbox until Active → release → GET
// lifecycle until Released, each Environment with its own idempotency key on one run.
import { execFileSync, fork } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as projectsClient from '../http/clients/projects-client.ts';
import type * as selectionsClient from '../http/clients/run-selection-client.ts';
import type * as policies from '../store/network-policies.ts';
import type * as databases from '../test/support/databases.ts';
import type * as harness from '../test/support/harness.ts';

type DatabasesModule = typeof databases;
type HarnessModule = typeof harness;
type ProjectsModule = typeof projectsClient;
type SelectionsModule = typeof selectionsClient;
type PoliciesModule = typeof policies;

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..');

const intFromEnv = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};

/** The changes, in the order they are applied on top of each other. */
const changes = [
  {
    name: 'authority calls per route kind',
    files: [
      'actors/guard.ts',
      'actors/lifecycle.ts',
      'actors/sandbox/service.ts',
      'actors/workspace/service.ts',
    ],
  },
  {
    name: 'pooled HTTP client',
    files: [
      'http/clients/fetch-json.ts',
      'http/clients/projects-client.ts',
      'http/clients/run-selection-client.ts',
    ],
  },
  { name: 'verified-token cache', files: ['http/auth/verify.ts'] },
];

interface ChildResult {
  lifecycles: number;
  cpuMs: number;
  wallMs: number;
  requests: number;
}

interface Row {
  variant: string;
  lifecycles: number;
  projects: number;
  selection: number;
  jwks: number;
  requests: number;
  cpuMs: number;
  wallMs: number;
}

// ---------------------------------------------------------------------------------------------
// Child: one stack from one source tree, driven through N lifecycles.

async function child(root: string): Promise<void> {
  const send = (message: unknown) => process.send?.(message);
  const setup = await new Promise<{
    projectsUrl: string;
    runSelectionUrl: string;
    jwksUrl: string;
    token: string;
    n: number;
    clients: number;
    issuer: string;
    audience: string;
  }>((resolve) => process.once('message', (m) => resolve(m as never)));
  const { isolatedPostgres } = (await import(
    path.join(root, 'test/support/databases.ts')
  )) as DatabasesModule;
  const { buildHarness } = (await import(path.join(root, 'test/support/harness.ts'))) as HarnessModule;
  const { HttpProjectsAuthority } = (await import(
    path.join(root, 'http/clients/projects-client.ts')
  )) as ProjectsModule;
  const { HttpRunSelections } = (await import(
    path.join(root, 'http/clients/run-selection-client.ts')
  )) as SelectionsModule;
  const { putNetworkPolicy } = (await import(path.join(root, 'store/network-policies.ts'))) as PoliciesModule;

  const pg = await isolatedPostgres();
  const db = pg.open();
  const h = await buildHarness(db, {
    workers: {},
    authority: new HttpProjectsAuthority(setup.projectsUrl, 5_000),
    selections: new HttpRunSelections(setup.runSelectionUrl, 5_000),
    production: {
      verifier: {
        kind: 'jwks',
        jwksUrl: setup.jwksUrl,
        issuer: setup.issuer,
        audience: setup.audience,
        algorithms: ['ES256'],
      },
    },
  });
  await putNetworkPolicy(db, {
    tenantId: 'acme',
    projectId: 'checkout',
    generation: 1,
    policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] },
  });
  send({ identity: h.provider.identity });
  await new Promise((resolve) => process.once('message', resolve));

  const token = setup.token;
  const envs = '/api/projects/checkout/runs/run-1/environments';
  let requests = 0;
  const call = async (method: string, url: string, body?: unknown, ok = [200, 201, 202]) => {
    requests += 1;
    const res = await h.request(method, url, { token, ...(body === undefined ? {} : { body }) });
    const answer = (await res.json()) as Record<string, unknown>;
    if (!ok.includes(res.status))
      throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const until = async (probe: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error('lifecycle did not finish in 60 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const lifecycle = async (key: string) => {
    const { environmentId } = await call('POST', envs, { idempotencyKey: key });
    const base = `${envs}/${String(environmentId)}`;
    const volume = await call('POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' });
    await call('POST', `${base}/sandbox/provision`, {
      idempotencyKey: 'prov-1',
      workspace: {
        volumeId: volume['volumeId'],
        resourceGeneration: volume['resourceGeneration'],
        dataGeneration: volume['dataGeneration'],
        mountPath: '/workspace',
        readOnly: false,
      },
      networkPolicyGeneration: 1,
    });
    await until(async () => {
      const inspected = await call('GET', `${base}/sandbox`);
      return (inspected['lease'] as { state: string }).state === 'Active';
    });
    await call('POST', `${base}/release`, { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' });
    await until(async () => (await call('GET', `${base}/lifecycle`))['state'] === 'Released');
  };
  // Warm-up (JIT, pools, the key set), not measured.
  for (let i = 0; i < 3; i += 1) await lifecycle(`warm-${i}`);
  send({ warmedUp: true });
  await new Promise((resolve) => process.once('message', resolve));

  requests = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: setup.clients }, async () => {
      while (next < setup.n) {
        const i = next;
        next += 1;
        await lifecycle(`bench-${i}`);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  const result: ChildResult = {
    lifecycles: setup.n,
    cpuMs: (used.user + used.system) / 1000,
    wallMs: performance.now() - started,
    requests,
  };
  send({ result });
  await h.close();
  await pg.drop();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Parent: build the trees, start the stand-ins, run every variant in alternation, report.

/** A copy of the working tree with the files of `reverted` changes as they are at HEAD. */
function treeWith(reverted: readonly { files: string[] }[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandlot-authority-'));
  cpSync(repo, dir, {
    recursive: true,
    filter: (source) => {
      const rel = path.relative(repo, source);
      return !['node_modules', '.git', 'bench/peers', 'bench/results', 'dist'].some(
        (skip) => rel === skip || rel.startsWith(`${skip}/`),
      );
    },
  });
  symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'));
  for (const file of reverted.flatMap((c) => c.files)) {
    writeFileSync(path.join(dir, file), execFileSync('git', ['show', `HEAD:${file}`], { cwd: repo }));
  }
  return dir;
}

async function parent(): Promise<void> {
  const n = intFromEnv('BENCH_LIFECYCLES', 60);
  const clients = intFromEnv('BENCH_CLIENTS', 4);
  const rounds = intFromEnv('BENCH_ROUNDS', 2);
  const { startFakeServices, fakeIssuer, fakeAudience } = await import('../test/support/fake-services.ts');
  const fake = await startFakeServices();
  fake.grant('acme', 'checkout', 'alice', ['ReadProjects', 'WriteProjects', 'ReadRunSelection']);
  const token = await fake.sign({ sub: 'alice', tenant: 'acme' });

  const variants = changes.map((_, applied) => ({
    name: applied === 0 ? 'HEAD (before)' : `+ ${changes[applied - 1]?.name ?? ''}`,
    root: treeWith(changes.slice(applied)),
  }));
  variants.push({ name: `+ ${changes.at(-1)?.name ?? ''} (working tree)`, root: repo });

  const rows: Row[] = [];
  const run = async (variant: { name: string; root: string }): Promise<Row> => {
    const proc = fork(path.join(repo, 'bench/authority.ts'), ['--child', variant.root], {
      execArgv: ['--import', 'tsx'],
      cwd: variant.root,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const messages: unknown[] = [];
    let wake: (() => void) | null = null;
    proc.on('message', (m) => {
      messages.push(m);
      wake?.();
    });
    const next = async (): Promise<Record<string, unknown>> => {
      while (messages.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return messages.shift() as Record<string, unknown>;
    };
    const { projectsUrl, runSelectionUrl, jwksUrl } = fake;
    proc.send({
      projectsUrl,
      runSelectionUrl,
      jwksUrl,
      token,
      n,
      clients,
      issuer: fakeIssuer,
      audience: fakeAudience,
    });
    const { identity } = (await next()) as { identity: object };
    fake.setSelection('acme', 'checkout', 'run-1', [{ ...identity, exclusive: true }]);
    proc.send({ go: true });
    await next(); // warmed up
    const seen = fake.requests.length;
    proc.send({ go: true });
    const { result } = (await next()) as { result: ChildResult };
    const window = fake.requests.slice(seen);
    const count = (service: string) => window.filter((r) => r.service === service).length / result.lifecycles;
    await new Promise((resolve) => proc.once('exit', resolve));
    return {
      variant: variant.name,
      lifecycles: result.lifecycles,
      projects: count('projects'),
      selection: count('selection'),
      jwks: count('jwks'),
      requests: result.requests / result.lifecycles,
      cpuMs: result.cpuMs / result.lifecycles,
      wallMs: result.wallMs,
    };
  };

  for (let round = 0; round < rounds; round += 1) {
    for (const variant of variants) {
      const row = await run(variant);
      rows.push(row);
      console.log(
        `round ${round + 1}  ${row.variant.padEnd(48)} requests/lc ${row.requests.toFixed(1)}  projects/lc ${row.projects.toFixed(1).padStart(5)}  selection/lc ${row.selection.toFixed(1).padStart(4)}  jwks/lc ${row.jwks.toFixed(2)}  CPU ms/lc ${row.cpuMs.toFixed(1).padStart(6)}  lifecycles/s ${((row.lifecycles * 1000) / row.wallMs).toFixed(1)}`,
      );
    }
  }
  console.log('\nmedian over rounds:');
  for (const variant of variants) {
    const mine = rows.filter((r) => r.variant === variant.name);
    const median = (f: (r: Row) => number) => {
      const v = mine.map(f).sort((a, b) => a - b);
      return v[Math.floor(v.length / 2)] ?? NaN;
    };
    console.log(
      `${variant.name.padEnd(48)} upstream calls/lc ${median((r) => r.projects + r.selection)
        .toFixed(1)
        .padStart(
          5,
        )} (projects ${median((r) => r.projects).toFixed(1)}, selection ${median((r) => r.selection).toFixed(1)})  CPU ms/lc ${median(
        (r) => r.cpuMs,
      )
        .toFixed(1)
        .padStart(6)}  lifecycles/s ${median((r) => (r.lifecycles * 1000) / r.wallMs).toFixed(1)}`,
    );
  }
  for (const variant of variants)
    if (variant.root !== repo) rmSync(variant.root, { recursive: true, force: true });
  await fake.close();
}

if (process.argv[2] === '--child') await child(process.argv[3] ?? repo);
else await parent();
