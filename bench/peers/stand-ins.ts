// The identity provider's JWKS and the Projects-like authority, on one node:http server on
// 127.0.0.1, started by the peer driver (the same role test/support/fake-services.ts plays for
// Sandlot). Every subject is granted the write permission; the point is the cost of asking.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { peerAudience, peerIssuer, writePermission } from './front.ts';

export interface StandIns {
  jwksUrl: string;
  authorityUrl: string;
  /** Calls the authority answered so far. */
  authorityCalls(): number;
  sign(subject: string, tenant: string): Promise<string>;
  close(): Promise<void>;
}

const kid = 'peers-es256-1';
const PERMISSIONS = /^\/projects\/v1\/tenants\/[^/]+\/projects\/[^/]+\/subjects\/[^/]+\/permissions$/;

export async function startStandIns(): Promise<StandIns> {
  const signing = await generateKeyPair('ES256');
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(signing.publicKey)), kid, alg: 'ES256', use: 'sig' }],
  });
  const grant = JSON.stringify({ permissions: [writePermission] });
  let calls = 0;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const body = path === '/.well-known/jwks.json' ? jwks : PERMISSIONS.test(path) ? grant : undefined;
    if (body !== grant) {
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' }).end(body ?? '{}');
      return;
    }
    calls += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    jwksUrl: `${base}/.well-known/jwks.json`,
    authorityUrl: `${base}/`,
    authorityCalls: () => calls,
    sign: (subject, tenant) =>
      new SignJWT({ tenant })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setSubject(subject)
        .setIssuer(peerIssuer)
        .setAudience(peerAudience)
        .setIssuedAt()
        .setExpirationTime('2h')
        .sign(signing.privateKey),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
