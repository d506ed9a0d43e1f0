// Local stand-ins for the three services production mode calls and we do not own: the identity
// provider's JSON Web Key Set, the Projects authority and the run-selection service, on one node:http
// server bound to 127.0.0.1. For trying production mode on one machine (`sandlot dev upstream`),
// never for a deployment: it allows one configured tenant, project and run, and nothing else.
// The answers follow the contracts the production clients parse (http/clients/projects-client.ts,
// http/clients/run-selection-client.ts); anything else is 404, so a client on a wrong path shows.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';
import { permissions, type ProviderCandidate } from '../actors/ports.ts';

export interface StandInScope {
  tenant: string;
  project: string;
  run: string;
  /** The one candidate the run's selection names (the provider the trial runs). */
  candidate: ProviderCandidate;
}

export interface UpstreamStandIns {
  baseUrl: string;
  jwksUrl: string;
  projectsUrl: string;
  runSelectionUrl: string;
  close(): Promise<void>;
}

export const JWKS_PATH = '/.well-known/jwks.json';
const PROJECTS = '/projects/';
const SELECTION = '/run-selection/';

/** The path's segments under `prefix`, decoded; null when it is not under it or badly encoded. */
function segments(pathname: string, prefix: string): string[] | null {
  if (!pathname.startsWith(prefix)) return null;
  try {
    return pathname.slice(prefix.length).split('/').map(decodeURIComponent);
  } catch {
    return null;
  }
}

export async function startUpstreamStandIns(
  scope: StandInScope,
  publicJwk: JWK,
  port: number,
): Promise<UpstreamStandIns> {
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const ours = (tenant: string | undefined, project: string | undefined) =>
    tenant === scope.tenant && project === scope.project;

  const server = createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://stand-in');
    if (req.method !== 'GET') return send(res, 405, { error: 'read-only stand-in' });
    if (pathname === JWKS_PATH) return send(res, 200, { keys: [publicJwk] });
    // tenants/{t}/projects/{p}/subjects/{s}/permissions: every subject of the configured project
    // holds every permission; anyone else is unknown (404, as the real service says it).
    const grant = segments(pathname, PROJECTS);
    if (grant?.length === 7 && grant[0] === 'tenants' && grant[2] === 'projects' && grant[4] === 'subjects') {
      if (grant[6] === 'permissions' && ours(grant[1], grant[3]) && grant[5] !== '')
        return send(res, 200, { permissions: [...permissions] });
      return send(res, 404, { error: 'no such subject on this project' });
    }
    // tenants/{t}/projects/{p}/runs/{r}/selection: the configured run selects the one candidate.
    const selection = segments(pathname, SELECTION);
    if (
      selection?.length === 7 &&
      selection[0] === 'tenants' &&
      selection[2] === 'projects' &&
      selection[4] === 'runs' &&
      selection[6] === 'selection' &&
      ours(selection[1], selection[3]) &&
      selection[5] === scope.run
    ) {
      return send(res, 200, { candidates: [scope.candidate] });
    }
    return send(res, 404, { error: 'not known to the stand-in' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    jwksUrl: `${baseUrl}${JWKS_PATH}`,
    projectsUrl: `${baseUrl}${PROJECTS}`,
    runSelectionUrl: `${baseUrl}${SELECTION}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
