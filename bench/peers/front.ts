// The HTTP shape Sandlot serves in production, put in front of a peer engine so the comparison is
// like for like: every request carries an ES256 bearer token verified against the identity
// provider's JWKS (fetched once, cached by jose), then asks the Projects-like authority stand-in
// for the caller's permissions (once per request, never cached, as Sandlot does), and only then
// runs the engine. One request runs one whole lifecycle and answers when it reached Released.
import { Hono } from 'hono';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { z } from 'zod';

export const peerIssuer = 'https://idp.peers.test/';
export const peerAudience = 'sandlot';
export const writePermission = 'environments.write';

export interface FrontOptions {
  jwksUrl: string;
  authorityUrl: string;
  /** Runs the lifecycle of Environment `id` to Released on the engine. */
  invoke: (id: string) => Promise<void>;
}

const claims = z.object({ sub: z.string().min(1), tenant: z.string().min(1) });
const authorityAnswer = z.object({ permissions: z.array(z.string()) });

export function lifecyclePath(tenant: string, project: string, id: string): string {
  return `/v1/tenants/${tenant}/projects/${project}/environments/${id}/lifecycle`;
}

export function createFront(options: FrontOptions): Hono {
  const keys = createRemoteJWKSet(new URL(options.jwksUrl));
  const app = new Hono();
  app.post('/v1/tenants/:tenant/projects/:project/environments/:id/lifecycle', async (c) => {
    const token = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
    if (token === undefined) return c.json({ title: 'Unauthorized' }, 401);
    let caller: z.infer<typeof claims>;
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: peerIssuer,
        audience: peerAudience,
        algorithms: ['ES256'],
      });
      caller = claims.parse(payload);
    } catch {
      return c.json({ title: 'Unauthorized' }, 401);
    }
    const { tenant, project, id } = c.req.param();
    if (caller.tenant !== tenant) return c.json({ title: 'Forbidden' }, 403);
    const granted = await permissionsOf(options.authorityUrl, tenant, project, caller.sub);
    if (!granted.includes(writePermission)) return c.json({ title: 'Forbidden' }, 403);
    await options.invoke(id);
    return c.json({ id, state: 'Released' });
  });
  return app;
}

async function permissionsOf(
  base: string,
  tenant: string,
  project: string,
  subject: string,
): Promise<string[]> {
  const path = ['tenants', tenant, 'projects', project, 'subjects', subject, 'permissions'].map(
    encodeURIComponent,
  );
  const response = await fetch(new URL(`projects/v1/${path.join('/')}`, base), {
    headers: { accept: 'application/json' },
    redirect: 'error',
    signal: AbortSignal.timeout(5_000),
  });
  if (response.status !== 200) throw new Error(`authority answered HTTP ${response.status}`);
  return authorityAnswer.parse(await response.json()).permissions;
}
