// A production composition (composeSandlot) over real PostgreSQL (its own schema) and, optionally,
// Redis (its own BullMQ prefix), with JWKS tokens from the fake identity provider, plus one sandbox
// lifecycle driven over its HTTP app: register → workspace → provision → Active → release → Released.
import type { Logger } from 'pino';
import { composeSandlot, type Sandlot } from '../../cli/compose.ts';
import { loadConfig } from '../../config/load.ts';
import type { Config } from '../../config/types.ts';
import { simulatedIdentity } from '../../providers/simulated/identity.ts';
import { loadOrCreateDevKey } from '../../http/auth/dev-key.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { putNetworkPolicy } from '../../store/network-policies.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { fakeIssuer, startFakeServices } from '../support/fake-services.ts';
import { uniquePrefix } from './workers-support.ts';

export const tenant = 'acme';
export const project = 'checkout';
const permissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'];

export interface Composed {
  sandlot: Sandlot;
  config: Config;
  /** Grants alice the project, writes the run's selection and network policy generation 1. */
  seed(run: string): Promise<void>;
  user: string;
  operator: string;
  request(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

export interface ComposeSettings {
  logger: Logger;
  redis?: boolean;
  /** A password written into DATABASE_URL and REDIS_URL (both servers here accept any). */
  password?: string;
  env?: Record<string, string>;
}

export async function composeProduction(settings: ComposeSettings): Promise<Composed> {
  const fake = await startFakeServices();
  let pg: IsolatedPostgres | undefined;
  try {
    pg = await isolatedPostgres();
    const prefix = uniquePrefix();
    const url = new URL(testDatabaseUrl);
    if (settings.password !== undefined) url.password = settings.password;
    url.searchParams.set('options', `-c search_path=${pg.schema}`);
    const redisUrl = `redis://${settings.password === undefined ? '' : `:${settings.password}@`}127.0.0.1:6379`;
    const config = loadConfig({
      DATABASE_URL: url.toString(),
      ...(settings.redis === false ? {} : { REDIS_URL: redisUrl }),
      SANDLOT_JWT_ISSUER: fakeIssuer,
      SANDLOT_JWKS_URL: fake.jwksUrl,
      SANDLOT_JWT_ALGORITHMS: 'ES256',
      SANDLOT_PROJECTS_URL: fake.projectsUrl,
      SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
      SANDLOT_BULLMQ_PREFIX: prefix,
      SANDLOT_RECONCILE_EVERY_MS: '200',
      SANDLOT_CALL_TIMEOUT_MS: '2000',
      ...settings.env,
    });
    const sandlot = await composeSandlot(config, settings.logger);
    const drop = pg;
    return {
      sandlot,
      config,
      async seed(run) {
        fake.grant(tenant, project, 'alice', permissions);
        fake.setSelection(tenant, project, run, [{ ...simulatedIdentity('1'), exclusive: true }]);
        await putNetworkPolicy(sandlot.db, {
          tenantId: tenant,
          projectId: project,
          generation: 1,
          policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] },
        });
      },
      user: await fake.sign({ sub: 'alice', tenant }),
      operator: await fake.sign({ sub: 'ops', tenant, roles: ['operator'] }),
      request: requester(sandlot),
      async close() {
        await sandlot.close();
        await fake.close();
        await drop.drop();
      },
    };
  } catch (error) {
    await fake.close();
    await pg?.drop();
    throw error;
  }
}

function requester(sandlot: Sandlot): Composed['request'] {
  return async (method, path, { token, body, headers = {} } = {}) => {
    const all: Record<string, string> = { ...headers };
    if (token !== undefined) all['authorization'] = `Bearer ${token}`;
    if (body !== undefined) all['content-type'] = 'application/json';
    return sandlot.app.request(path, {
      method,
      headers: all,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  };
}

/** Embedded mode (PGlite in `dataDir`, the dev signing key there, admin routes to seed with). */
export async function composeEmbedded(logger: Logger, dataDir: string): Promise<Composed> {
  const config = loadConfig({ SANDLOT_DATA_DIR: dataDir, SANDLOT_RECONCILE_EVERY_MS: '200' });
  const sandlot = await composeSandlot(config, logger);
  const key = await loadOrCreateDevKey(dataDir);
  const mint = (subject: string, operator: boolean) =>
    mintDevToken({
      key,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      tenant,
      subject,
      operator,
      ttlSeconds: 600,
    });
  const operator = await mint('ops', true);
  const request = requester(sandlot);
  const put = async (path: string, body: unknown) => {
    const res = await request('PUT', path, { token: operator, body });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const admin = `/admin/tenants/${tenant}/projects/${project}`;
  return {
    sandlot,
    config,
    async seed(run) {
      await put(`${admin}/grants/alice`, { permissions });
      const identity = (await (
        await request('GET', '/admin/provider', { token: operator })
      ).json()) as object;
      await put(`${admin}/runs/${run}/selection`, { candidates: [{ ...identity, exclusive: true }] });
      await put(`${admin}/network-policies/1`, { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } });
    },
    user: await mint('alice', false),
    operator,
    request,
    close: () => sandlot.close(),
  };
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} did not happen; last: ${JSON.stringify(last)}`);
}

export interface LifecycleResult {
  environmentId: string;
  operationId: string;
  /** Every x-request-id the lifecycle sent (each request carries its own). */
  requestIds: string[];
}

/** register → workspace → provision → Active → release → Released, each request with an x-request-id. */
export type Send = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: Record<string, unknown> }>;

/** The caller's token on every request of one run's lease (seeded first with `c.seed(run)`). */
export function sender(c: Composed): Send {
  return async (method, path, body) => {
    const res = await c.request(method, path, { token: c.user, ...(body === undefined ? {} : { body }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
}

/** Registers the run's Environment, creates its Workspace volume and asks for a lease (not awaited). */
export async function provisionLease(
  run: string,
  send: Send,
): Promise<{ environmentId: string; base: string; provisioned: Awaited<ReturnType<Send>> }> {
  const envs = `/api/projects/${project}/runs/${run}/environments`;
  const registered = await send('POST', envs, { idempotencyKey: `env-${run}` });
  if (registered.status !== 201) throw new Error(`register: ${JSON.stringify(registered)}`);
  const environmentId = registered.body['environmentId'] as string;
  const base = `${envs}/${environmentId}`;
  const volume = (await send('POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' })).body;
  const provisioned = await send('POST', `${base}/sandbox/provision`, {
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
  return { environmentId, base, provisioned };
}

export async function runLifecycle(c: Composed, run = 'run-1'): Promise<LifecycleResult> {
  await c.seed(run);
  const requestIds: string[] = [];
  let serial = 0;
  const send = async (method: string, path: string, body?: unknown) => {
    const id = `req-${run}-${++serial}`;
    requestIds.push(id);
    const res = await c.request(method, path, {
      token: c.user,
      ...(body === undefined ? {} : { body }),
      headers: { 'x-request-id': id },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const { environmentId, base, provisioned } = await provisionLease(run, send);
  if (provisioned.status !== 202) throw new Error(`provision: ${JSON.stringify(provisioned)}`);
  await until(
    'lease Active',
    async () => (await send('GET', `${base}/sandbox`)).body,
    (b) => (b['lease'] as { state?: string } | undefined)?.state === 'Active',
  );
  const released = await send('POST', `${base}/release`, {
    expectedLifecycleGeneration: 1,
    idempotencyKey: 'rel-1',
  });
  if (released.status !== 202) throw new Error(`release: ${JSON.stringify(released)}`);
  await until(
    'lifecycle Released',
    async () => (await send('GET', `${base}/lifecycle`)).body,
    (b) => b['state'] === 'Released',
  );
  return { environmentId, operationId: provisioned.body['operationId'] as string, requestIds };
}
