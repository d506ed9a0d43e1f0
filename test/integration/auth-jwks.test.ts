// JWKS token verification against a key set served over HTTP on 127.0.0.1 (a socket, so not a unit
// test; the HS256 and middleware cases are in test/unit/auth.test.ts).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthenticationError, createTokenVerifier } from '../../http/auth/verify.ts';
import type { TokenVerifier } from '../../http/auth/verify.ts';

const ISSUER = 'sandlot-dev';
const AUDIENCE = 'sandlot';

async function rejection(verifier: TokenVerifier, header: string | undefined): Promise<AuthenticationError> {
  const err: unknown = await verifier.verify(header).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthenticationError);
  return err as AuthenticationError;
}

describe('jwks token verification', () => {
  let server: Server;
  let baseUrl: string;
  let es256: CryptoKey;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    es256 = pair.privateKey;
    const jwks = JSON.stringify({
      keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }],
    });
    server = createServer((req, res) => {
      if (req.url === '/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
      } else {
        res.writeHead(500).end();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const verifier = (file = 'jwks.json', algorithms = ['ES256']) =>
    createTokenVerifier({
      kind: 'jwks',
      jwksUrl: `${baseUrl}/${file}`,
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms,
    });

  const sign = (alg: string, kid: string, key: CryptoKey) =>
    new SignJWT({ tenant: 'acme' })
      .setProtectedHeader({ alg, kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('bob')
      .setExpirationTime('1m')
      .sign(key);

  it('accepts an ES256 token signed by a published key', async () => {
    await expect(verifier().verify(`Bearer ${await sign('ES256', 'k1', es256)}`)).resolves.toEqual({
      tenantId: 'acme',
      subject: 'bob',
      operator: false,
    });
  });

  it('rejects an RS256 token when only ES256 is allowed', async () => {
    const rsa = await generateKeyPair('RS256');
    const err = await rejection(verifier(), `Bearer ${await sign('RS256', 'k1', rsa.privateKey)}`);
    expect(err.reason).toBe('algorithm not allowed');
  });

  it('rejects an ES256 token from an unpublished key', async () => {
    const other = await generateKeyPair('ES256');
    expect(
      (await rejection(verifier(), `Bearer ${await sign('ES256', 'k1', other.privateKey)}`)).reason,
    ).toBe('bad signature');
    expect(
      (await rejection(verifier(), `Bearer ${await sign('ES256', 'k9', other.privateKey)}`)).reason,
    ).toBe('no matching signing key');
  });

  it('reports an unreachable key set without blaming the token', async () => {
    const err = await rejection(verifier('missing.json'), `Bearer ${await sign('ES256', 'k1', es256)}`);
    expect(err.reason).toBe('signing keys unavailable');
  });

  it.each([['none'], ['HS256']])('refuses to allow %s with a key set', (alg) => {
    expect(() => verifier('jwks.json', ['ES256', alg])).toThrow(/cannot allow/);
  });
});
