// Builds the real application over a real database, with an HS256 verifier and a helper to mint
// tokens, so HTTP tests go through exactly the code `sandlot serve` runs.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { environmentDefinition } from '../../actors/environment-definition.ts';
import { LifecycleService } from '../../actors/lifecycle.ts';
import { ActorRuntime } from '../../actors/runtime.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { createApp } from '../../http/app.ts';
import { simulatedIdentity } from '../../providers/simulated/identity.ts';
import type { Database } from '../../store/db.ts';
import { GrantsAuthority } from '../../store/grants.ts';
import { migrate } from '../../store/migrate.ts';
import { TableRunSelections } from '../../store/run-selections.ts';

export const issuer = 'sandlot-test';
export const audience = 'sandlot';

export interface Harness {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  request(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<Response>;
  token(
    tenant: string,
    subject: string,
    options?: { operator?: boolean; ttlSeconds?: number; audience?: string },
  ): Promise<string>;
}

export async function buildHarness(
  db: Database,
  options: { key?: Uint8Array; migrated?: boolean } = {},
): Promise<Harness> {
  if (options.migrated !== true) await migrate(db);
  const key = options.key ?? new Uint8Array(randomBytes(32));
  const runtime = new ActorRuntime<EnvironmentEvent>({ db, definition: environmentDefinition });
  const lifecycle = new LifecycleService({
    db,
    runtime,
    authority: new GrantsAuthority(db),
    selections: new TableRunSelections(db),
  });
  const app = createApp({
    db,
    lifecycle,
    verifier: createTokenVerifier({ kind: 'hs256', key, issuer, audience }),
    logger: pino({ level: 'silent' }),
    provider: simulatedIdentity('1'),
    embedded: true,
  });
  return {
    db,
    runtime,
    async request(method, path, { token, body } = {}) {
      const headers: Record<string, string> = {};
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      return app.request(path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    },
    token: (tenant, subject, opts = {}) =>
      mintDevToken({
        key,
        issuer,
        audience: opts.audience ?? audience,
        tenant,
        subject,
        operator: opts.operator ?? false,
        ttlSeconds: opts.ttlSeconds ?? 600,
      }),
  };
}

export const allPermissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'] as const;

/** Grants a subject permissions and writes the run's selection, through the admin routes. */
export async function seedProject(
  h: Harness,
  {
    tenant,
    project,
    run,
    subject,
    permissions = allPermissions,
  }: {
    tenant: string;
    project: string;
    run: string;
    subject: string;
    permissions?: readonly string[];
  },
): Promise<void> {
  const operator = await h.token(tenant, 'operator', { operator: true });
  const grant = await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/grants/${subject}`, {
    token: operator,
    body: { permissions },
  });
  if (grant.status !== 200) throw new Error(`grant failed: ${grant.status} ${await grant.text()}`);
  const provider = (await (await h.request('GET', '/admin/provider', { token: operator })).json()) as object;
  const selection = await h.request(
    'PUT',
    `/admin/tenants/${tenant}/projects/${project}/runs/${run}/selection`,
    {
      token: operator,
      body: { candidates: [{ ...provider, exclusive: true }] },
    },
  );
  if (selection.status !== 200 && selection.status !== 201) {
    throw new Error(`selection failed: ${selection.status} ${await selection.text()}`);
  }
}
