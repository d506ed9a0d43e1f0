// Stand-ins for the services production Sandlot calls: the Projects authority, the run-selection
// service and the identity provider's JSON Web Key Set, on one node:http server on 127.0.0.1.
// Each service can be told to fail (HTTP 500, hang, non-JSON, wrong shape) from its Nth call on.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { ProjectsAuthority, RunSelectionSource } from '../../actors/ports.ts';

export type Service = 'projects' | 'selection';
export type Failure = 'status-500' | 'status-502' | 'hang' | 'not-json' | 'bad-shape';

export interface FailurePlan {
  failure: Failure;
  /** Calls answered normally before the failure starts (default 0: the next call fails). */
  after?: number;
}

export interface SeenRequest {
  service: Service | 'jwks' | 'unexpected';
  method: string;
  path: string;
  accept: string | undefined;
}

export interface TokenClaims {
  sub: string;
  tenant: string;
  roles?: string[];
}

export const fakeIssuer = 'https://idp.example.test/';
export const fakeAudience = 'sandlot';

const PERMISSIONS = /^\/projects\/v1\/tenants\/([^/]+)\/projects\/([^/]+)\/subjects\/([^/]+)\/permissions$/;
const SELECTION = /^\/selection\/tenants\/([^/]+)\/projects\/([^/]+)\/runs\/([^/]+)\/selection$/;
const JWKS_PATH = '/.well-known/jwks.json';

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export interface FakeServices {
  /** Base URLs as they would be configured (the Projects one without a trailing slash on purpose). */
  projectsUrl: string;
  runSelectionUrl: string;
  jwksUrl: string;
  requests: SeenRequest[];
  grant(tenant: string, project: string, subject: string, permissions: readonly string[]): void;
  revoke(tenant: string, project: string, subject: string): void;
  setSelection(tenant: string, project: string, run: string, candidates: unknown[]): void;
  fail(service: Service, plan: FailurePlan | undefined): void;
  /** The published ES256 key and its `kid`, for tokens `sign` cannot shape. */
  signing: { key: KeyPair; kid: string };
  /** An ES256 token signed with the published key (or `key`), with `kid` set. */
  sign(claims: TokenClaims, options?: { issuer?: string; audience?: string; key?: KeyPair }): Promise<string>;
  close(): Promise<void>;
}

const keyOf = (...parts: string[]) => JSON.stringify(parts);

/**
 * Answer Projects and run selection from these ports instead of the fake's own maps: a process in
 * production mode then sees exactly what a test's embedded tables hold (grants, selections).
 */
export interface MirrorOf {
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
}

export async function startFakeServices(options: { mirror?: MirrorOf } = {}): Promise<FakeServices> {
  const { mirror } = options;
  const signing = await generateKeyPair('ES256');
  const kid = 'fake-es256-1';
  const jwks = { keys: [{ ...(await exportJWK(signing.publicKey)), kid, alg: 'ES256', use: 'sig' }] };
  const grants = new Map<string, string[]>();
  const selections = new Map<string, unknown[]>();
  const plans = new Map<Service, { failure: Failure; remaining: number }>();
  const hanging = new Set<ServerResponse>();
  const requests: SeenRequest[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  /** True when the planned failure answered this call. */
  const failed = (service: Service, res: ServerResponse): boolean => {
    const plan = plans.get(service);
    if (plan === undefined) return false;
    if (plan.remaining > 0) {
      plan.remaining -= 1;
      return false;
    }
    switch (plan.failure) {
      case 'status-500':
        send(res, 500, { error: 'boom' });
        break;
      case 'status-502':
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>bad gateway</html>');
        break;
      case 'hang':
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        break;
      case 'not-json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"permissions": [');
        break;
      case 'bad-shape':
        send(res, 200, { granted: 'everything', candidates: 'any' });
        break;
    }
    return true;
  };

  const mirrored = async (
    res: ServerResponse,
    m: MirrorOf,
    kind: 'projects' | 'selection',
    parts: string[],
  ) => {
    const [tenant, project, third] = parts as [string, string, string];
    if (kind === 'projects') {
      const granted = await m.authority.permissions({ tenantId: tenant, subject: third }, project);
      if (granted.size === 0) send(res, 404, { error: 'no such subject on this project' });
      else send(res, 200, { permissions: [...granted] });
      return;
    }
    const selection = await m.selections.get(tenant, project, third);
    if (selection === null) send(res, 404, { error: 'no selection for this run' });
    else send(res, 200, { candidates: selection.candidates });
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const { pathname } = new URL(req.url ?? '/', 'http://fake');
    const seen = (service: SeenRequest['service']) =>
      requests.push({ service, method: req.method ?? '', path: pathname, accept: req.headers.accept });
    const permissions = PERMISSIONS.exec(pathname);
    const selection = SELECTION.exec(pathname);
    if (req.method === 'GET' && pathname === JWKS_PATH) {
      seen('jwks');
      send(res, 200, jwks);
    } else if (req.method === 'GET' && permissions !== null) {
      seen('projects');
      if (failed('projects', res)) return;
      if (mirror !== undefined) {
        mirrored(res, mirror, 'projects', permissions.slice(1).map(decodeURIComponent)).catch(() =>
          send(res, 500, { error: 'mirror failed' }),
        );
        return;
      }
      const [tenant, project, subject] = permissions.slice(1).map(decodeURIComponent) as [
        string,
        string,
        string,
      ];
      const granted = grants.get(keyOf(tenant, project, subject));
      if (granted === undefined) send(res, 404, { error: 'no such subject on this project' });
      else send(res, 200, { permissions: granted });
    } else if (req.method === 'GET' && selection !== null) {
      seen('selection');
      if (failed('selection', res)) return;
      if (mirror !== undefined) {
        mirrored(res, mirror, 'selection', selection.slice(1).map(decodeURIComponent)).catch(() =>
          send(res, 500, { error: 'mirror failed' }),
        );
        return;
      }
      const [tenant, project, run] = selection.slice(1).map(decodeURIComponent) as [string, string, string];
      const candidates = selections.get(keyOf(tenant, project, run));
      if (candidates === undefined) send(res, 404, { error: 'no selection for this run' });
      else send(res, 200, { candidates });
    } else {
      // Not 404: that would read as "no permissions" and hide a client calling the wrong path.
      seen('unexpected');
      send(res, 418, { error: `unexpected ${req.method} ${pathname}` });
    }
  };

  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    projectsUrl: `${base}/projects/v1`,
    runSelectionUrl: `${base}/selection/`,
    jwksUrl: `${base}${JWKS_PATH}`,
    requests,
    grant: (tenant, project, subject, permissions) =>
      grants.set(keyOf(tenant, project, subject), [...permissions]),
    revoke: (tenant, project, subject) => grants.delete(keyOf(tenant, project, subject)),
    setSelection: (tenant, project, run, candidates) =>
      selections.set(keyOf(tenant, project, run), candidates),
    fail(service, plan) {
      if (plan === undefined) plans.delete(service);
      else plans.set(service, { failure: plan.failure, remaining: plan.after ?? 0 });
    },
    signing: { key: signing, kid },
    sign: (claims, options = {}) =>
      new SignJWT({ tenant: claims.tenant, ...(claims.roles ? { roles: claims.roles } : {}) })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setIssuer(options.issuer ?? fakeIssuer)
        .setAudience(options.audience ?? fakeAudience)
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign((options.key ?? signing).privateKey),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
