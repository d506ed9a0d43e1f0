// Helpers for the sandbox invariant tests: a fresh database per scenario (fault scripts count calls
// per provider instance, and leftover leases of one scenario must not feed another's reconciler),
// custom run selections, row snapshots to prove "nothing changed", and a provider wrapper that
// counts (and can inspect) every call the workers make.
import pino from 'pino';
import type { SandboxProvider } from '../../providers/provider.ts';
import type { Database } from '../../store/db.ts';
import type { EffectProcessorDeps } from '../../workers/effect-processor.ts';
import { startWorkers, type WorkerHost, type WorkerSettings } from '../../workers/host.ts';
import { openBackend, type BackendName } from './databases.ts';
import { allPermissions, buildHarness, type Harness, type HarnessOptions } from './harness.ts';
import { json, type Scenario } from './sandbox-flow.ts';

/** Runs `body` against a harness over a database of its own, and tears both down afterwards. */
export async function inFreshHarness(
  backend: BackendName,
  options: HarnessOptions,
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const handle = await openBackend(backend);
  try {
    const h = await buildHarness(handle.db, options);
    try {
      await body(h);
    } finally {
      await h.close();
    }
  } finally {
    await handle.close();
  }
}

export interface ScenarioOptions {
  tenant?: string;
  project?: string;
  run?: string;
  key?: string;
  /** The run selection's candidates; default: the configured provider, exclusive. */
  candidates?: (provider: Record<string, unknown>) => Record<string, unknown>[];
  /** Network policy generations to register for the project (default [1]). */
  policyGenerations?: number[];
}

/** Like setupScenario, but with a chosen run selection and network policy generations. */
export async function setupCustomScenario(h: Harness, options: ScenarioOptions = {}): Promise<Scenario> {
  const { tenant = 'acme', project = 'checkout', run = 'run-1', key = 'env-1' } = options;
  const operator = await h.token(tenant, 'ops', { operator: true });
  const expectOk = async (what: string, res: Response) => {
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  };
  await expectOk(
    'grant',
    await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/grants/alice`, {
      token: operator,
      body: { permissions: allPermissions },
    }),
  );
  const provider = await json(await h.request('GET', '/admin/provider', { token: operator }));
  const candidates = options.candidates?.(provider) ?? [{ ...provider, exclusive: true }];
  await expectOk(
    'selection',
    await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/runs/${run}/selection`, {
      token: operator,
      body: { candidates },
    }),
  );
  for (const generation of options.policyGenerations ?? [1]) {
    await expectOk(
      `network policy ${generation}`,
      await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/network-policies/${generation}`, {
        token: operator,
        body: { policy: { egress: [{ toFQDNs: [`registry-${generation}.example`] }] } },
      }),
    );
  }
  const token = await h.token(tenant, 'alice');
  const envs = `/api/projects/${project}/runs/${run}/environments`;
  const registered = await h.request('POST', envs, { token, body: { idempotencyKey: key } });
  await expectOk('register', registered);
  const { environmentId } = await json<{ environmentId: string }>(registered);
  const base = `${envs}/${environmentId}`;
  const volume = await createVolume(h, { token, base }, 'ws-1');
  return { token, base, environmentId, volume };
}

export async function createVolume(
  h: Harness,
  s: Pick<Scenario, 'token' | 'base'>,
  key: string,
): Promise<Scenario['volume']> {
  const res = await h.request('POST', `${s.base}/workspace-volumes`, {
    token: s.token,
    body: { idempotencyKey: key },
  });
  if (res.status !== 201 && res.status !== 200) throw new Error(`volume: ${res.status} ${await res.text()}`);
  return json<Scenario['volume']>(res);
}

/** The provision body for a given volume (setupScenario's provisionBody uses the first one). */
export function provisionWith(
  volume: Scenario['volume'],
  key: string,
  networkPolicyGeneration = 1,
): Record<string, unknown> {
  return {
    idempotencyKey: key,
    workspace: {
      volumeId: volume.volumeId,
      resourceGeneration: volume.resourceGeneration,
      dataGeneration: volume.dataGeneration,
      mountPath: '/workspace',
      readOnly: false,
    },
    networkPolicyGeneration,
  };
}

export interface ProblemBody {
  type: string;
  status: number;
  detail?: string;
  [extension: string]: unknown;
}

/** Reads a problem+json answer, failing loudly if the answer is something else. */
export async function problemOf(res: Response): Promise<ProblemBody> {
  const contentType = res.headers.get('content-type') ?? '';
  if (!contentType.startsWith('application/problem+json'))
    throw new Error(`expected a problem, got ${res.status} ${contentType}: ${await res.text()}`);
  return json<ProblemBody>(res);
}

export const slug = (problem: ProblemBody) => problem.type.replace('urn:sandlot:problem:', '');

export interface LeaseRowView {
  resourceGeneration: number;
  operationId: string;
  state: string;
  providerFence: number;
  currentFencingGeneration: number;
  revision: number;
  hasReceipt: boolean;
}

export interface AttemptRowView {
  attemptId: string;
  kind: string;
  state: string;
  resolution: string | null;
  error: { code: string; message: string } | null;
  createdAt: Date;
  dispatchedAt: Date | null;
}

/** Everything an Environment owns that a change would touch, read in one go. */
export interface EnvironmentRows {
  revision: number;
  lifecycleState: string;
  leases: LeaseRowView[];
  attempts: AttemptRowView[];
  outbox: { attemptId: string | null; acknowledged: boolean }[];
  journal: number;
}

export async function environmentRows(db: Database, environmentId: string): Promise<EnvironmentRows> {
  const env = await db.query<{ revision: number; lifecycleState: string }>(
    `SELECT revision::int AS revision, lifecycle_state AS "lifecycleState" FROM environments WHERE environment_id = $1`,
    [environmentId],
  );
  const leases = await db.query<LeaseRowView>(
    `SELECT resource_generation AS "resourceGeneration", operation_id AS "operationId", state,
            provider_fence AS "providerFence", current_fencing_generation AS "currentFencingGeneration",
            revision::int AS revision, release_receipt IS NOT NULL AS "hasReceipt"
       FROM sandbox_leases WHERE environment_id = $1 ORDER BY resource_generation`,
    [environmentId],
  );
  const attempts = await db.query<AttemptRowView>(
    `SELECT attempt_id AS "attemptId", kind, state, resolution, error, created_at AS "createdAt",
            dispatched_at AS "dispatchedAt"
       FROM provider_attempts WHERE environment_id = $1 ORDER BY created_at, attempt_id`,
    [environmentId],
  );
  const outbox = await db.query<{ attemptId: string | null; acknowledged: boolean }>(
    `SELECT attempt_id AS "attemptId", acknowledged_at IS NOT NULL AS acknowledged
       FROM outbox WHERE environment_id = $1 ORDER BY outbox_id`,
    [environmentId],
  );
  const journal = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM environment_journal WHERE environment_id = $1`,
    [environmentId],
  );
  const row = env.rows[0];
  if (row === undefined) throw new Error(`no Environment ${environmentId}`);
  return {
    revision: row.revision,
    lifecycleState: row.lifecycleState,
    leases: leases.rows,
    attempts: attempts.rows,
    outbox: outbox.rows,
    journal: journal.rows[0]?.n ?? 0,
  };
}

/** Rows that matter for "nothing changed", without describe attempts (read-only observations). */
export function mutableRows(rows: EnvironmentRows) {
  return { ...rows, attempts: rows.attempts.filter((a) => a.kind !== 'describe') };
}

export type CallCounts = Record<'provision' | 'describe' | 'listOwned' | 'renew' | 'release', number>;

/**
 * Wraps a provider: counts every call by operation, and runs `before` ahead of each call (to look at
 * the database at the instant the provider is contacted). Identity and options pass through.
 */
/** What `runAttempt` needs to run one attempt by hand in a test, with `provider` as the provider. */
export function attemptDepsOf(h: Harness, provider: SandboxProvider): EffectProcessorDeps {
  return {
    db: h.db,
    runtime: h.runtime,
    actor: 'worker:test',
    provider,
    networkPolicies: h.networkPolicies,
    authority: h.authority,
    selections: h.selections,
    logger: pino({ level: 'silent' }),
    callTimeoutMs: 2_000,
  };
}

export function countingProvider(
  inner: SandboxProvider,
  before?: (operation: keyof CallCounts, request: unknown) => Promise<void>,
): SandboxProvider & { calls: CallCounts } {
  const calls: CallCounts = { provision: 0, describe: 0, listOwned: 0, renew: 0, release: 0 };
  const wrap =
    <K extends keyof CallCounts>(operation: K) =>
    async (request: Parameters<SandboxProvider[K]>[0], options: Parameters<SandboxProvider[K]>[1]) => {
      calls[operation]++;
      await before?.(operation, request);
      return (inner[operation] as (r: typeof request, o: typeof options) => Promise<unknown>).call(
        inner,
        request,
        options,
      );
    };
  return {
    calls,
    identity: inner.identity,
    optionsSnapshot: () => inner.optionsSnapshot(),
    provision: wrap('provision') as SandboxProvider['provision'],
    describe: wrap('describe') as SandboxProvider['describe'],
    listOwned: wrap('listOwned') as SandboxProvider['listOwned'],
    renew: wrap('renew') as SandboxProvider['renew'],
    release: wrap('release') as SandboxProvider['release'],
    callSettled: (call, listedAt) => inner.callSettled(call, listedAt),
  };
}

/** Starts the worker side over the harness's services with another provider (the harness had none). */
export function startWorkersWith(
  h: Harness,
  provider: SandboxProvider,
  settings: WorkerSettings = {},
): Promise<WorkerHost> {
  return startWorkers(
    {
      db: h.db,
      runtime: h.runtime,
      provider,
      logger: pino({ level: 'silent' }),
      networkPolicies: h.networkPolicies,
      authority: h.authority,
      selections: h.selections,
    },
    { reconcileEveryMs: 200, republishAfterMs: 500, relayPollMs: 100, callTimeoutMs: 2_000, ...settings },
  );
}

/** Polls `probe` until it returns something other than undefined. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
