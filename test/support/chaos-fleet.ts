// Many Environments at once through the real HTTP API, for chaos tests and benchmarks: one project,
// run and network policy seeded once, then register → Workspace → provision for each, with bounded
// concurrency, and SQL probes that count leases without going through the API.
import type { Database } from '../../store/db.ts';
import type { Harness } from './harness.ts';
import { seedProject } from './harness.ts';

export interface FleetProject {
  tenant: string;
  project: string;
  run: string;
  token: string;
  /** `/api/projects/<project>/runs/<run>/environments` */
  environments: string;
}

export interface Provisioned {
  environmentId: string;
  base: string;
  operationId: string;
  /** performance.now() when the provision answered 202. */
  provisionedAt: number;
}

export async function seedFleetProject(
  h: Harness,
  { tenant = 'acme', project = 'fleet', run = 'run-fleet' } = {},
): Promise<FleetProject> {
  await seedProject(h, { tenant, project, run, subject: 'alice' });
  const operator = await h.token(tenant, 'ops', { operator: true });
  const policy = await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/network-policies/1`, {
    token: operator,
    body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
  });
  if (policy.status !== 201 && policy.status !== 200) {
    throw new Error(`network policy: ${policy.status} ${await policy.text()}`);
  }
  return {
    tenant,
    project,
    run,
    token: await h.token(tenant, 'alice', { ttlSeconds: 3_600 }),
    environments: `/api/projects/${project}/runs/${run}/environments`,
  };
}

async function expectStatus(
  res: Response,
  statuses: number[],
  what: string,
): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  if (!statuses.includes(res.status)) throw new Error(`${what}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Registers an Environment, creates its Workspace volume and asks for a sandbox. */
export async function registerAndProvision(
  h: Harness,
  fleet: FleetProject,
  key: string,
): Promise<Provisioned> {
  const { token } = fleet;
  const registered = await expectStatus(
    await h.request('POST', fleet.environments, { token, body: { idempotencyKey: key } }),
    [200, 201],
    `register ${key}`,
  );
  const environmentId = String(registered['environmentId']);
  const base = `${fleet.environments}/${environmentId}`;
  const volume = await expectStatus(
    await h.request('POST', `${base}/workspace-volumes`, { token, body: { idempotencyKey: 'ws-1' } }),
    [200, 201],
    `workspace ${key}`,
  );
  const lease = await expectStatus(
    await h.request('POST', `${base}/sandbox/provision`, {
      token,
      body: {
        idempotencyKey: 'prov-1',
        workspace: {
          volumeId: volume['volumeId'],
          resourceGeneration: volume['resourceGeneration'],
          dataGeneration: volume['dataGeneration'],
          mountPath: '/workspace',
          readOnly: false,
        },
        networkPolicyGeneration: 1,
      },
    }),
    [202],
    `provision ${key}`,
  );
  return { environmentId, base, operationId: String(lease['operationId']), provisionedAt: performance.now() };
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** Lease counts by state, over every Environment of the schema. */
export async function leaseStates(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number }>(
    'SELECT state, count(*)::int AS n FROM sandbox_leases GROUP BY state',
  );
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}

export async function countActive(db: Database): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`,
  );
  return rows[0]?.n ?? 0;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}
