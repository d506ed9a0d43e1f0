import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Hono } from 'hono';
import { SignJWT } from 'jose';
import type { JWTPayload } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';

import { loadOrCreateDevKey } from '../../http/auth/dev-key.ts';
import type { AuthVariables } from '../../http/auth/middleware.ts';
import { requirePrincipal } from '../../http/auth/middleware.ts';
import { MAX_TTL_SECONDS, mintDevToken, parseTtl } from '../../http/auth/mint.ts';
import { AuthenticationError, createTokenVerifier } from '../../http/auth/verify.ts';
import type { TokenVerifier } from '../../http/auth/verify.ts';
import { Problem, conflict, problemBody, problemResponse } from '../../http/problems.ts';

const ISSUER = 'sandlot-dev';
const AUDIENCE = 'sandlot';
const KEY = new Uint8Array(randomBytes(32));
const hs256 = createTokenVerifier({ kind: 'hs256', key: KEY, issuer: ISSUER, audience: AUDIENCE });

const nowSeconds = () => Math.floor(Date.now() / 1000);
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Signs arbitrary claims so tests can build tokens the minting helper would refuse to produce. */
function signHs256(claims: JWTPayload, key: Uint8Array = KEY): Promise<string> {
  return new SignJWT({
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    tenant: 'acme',
    exp: nowSeconds() + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(key);
}

function without(claim: string): JWTPayload {
  return { [claim]: undefined };
}

async function rejection(verifier: TokenVerifier, header: string | undefined): Promise<AuthenticationError> {
  const err: unknown = await verifier.verify(header).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthenticationError);
  return err as AuthenticationError;
}

describe('hs256 token verification', () => {
  it('turns a valid token into a principal', async () => {
    const token = await mintDevToken({
      key: KEY,
      issuer: ISSUER,
      audience: AUDIENCE,
      tenant: 'acme',
      subject: 'alice',
      ttlSeconds: 60,
    });
    await expect(hs256.verify(`Bearer ${token}`)).resolves.toEqual({
      tenantId: 'acme',
      subject: 'alice',
      operator: false,
    });
  });

  it('grants operator when the roles claim contains operator', async () => {
    const token = await mintDevToken({
      key: KEY,
      issuer: ISSUER,
      audience: AUDIENCE,
      tenant: 'acme',
      subject: 'root',
      operator: true,
      ttlSeconds: 60,
    });
    await expect(hs256.verify(`Bearer ${token}`)).resolves.toMatchObject({ operator: true });
    await expect(hs256.verify(`Bearer ${await signHs256({ roles: ['viewer'] })}`)).resolves.toMatchObject({
      operator: false,
    });
  });

  it('accepts the scheme case-insensitively', async () => {
    await expect(hs256.verify(`bearer ${await signHs256({})}`)).resolves.toMatchObject({ tenantId: 'acme' });
  });

  it('tolerates 5 seconds of clock skew and no more', async () => {
    const token = await signHs256({ exp: 1_000_000 });
    const at = (seconds: number) =>
      createTokenVerifier({
        kind: 'hs256',
        key: KEY,
        issuer: ISSUER,
        audience: AUDIENCE,
        now: () => new Date(seconds * 1000),
      });
    await expect(at(1_000_004).verify(`Bearer ${token}`)).resolves.toMatchObject({ subject: 'alice' });
    expect((await rejection(at(1_000_006), `Bearer ${token}`)).reason).toBe('token expired');
  });

  const cases: [name: string, header: () => Promise<string | undefined>, reason: string, present: boolean][] =
    [
      ['01 no Authorization header', () => Promise.resolve(undefined), 'missing bearer token', false],
      [
        '02 a Basic credential',
        () => Promise.resolve('Basic YWxpY2U6c2VjcmV0'),
        'missing bearer token',
        false,
      ],
      ['03 Bearer with nothing after it', () => Promise.resolve('Bearer '), 'missing bearer token', false],
      ['04 garbage instead of a JWT', () => Promise.resolve('Bearer not-a-jwt'), 'malformed token', true],
      ['05 two tokens', async () => `Bearer ${await signHs256({})} x`, 'malformed token', true],
      [
        '06 an expired token',
        async () =>
          `Bearer ${await mintDevToken({
            key: KEY,
            issuer: ISSUER,
            audience: AUDIENCE,
            tenant: 'acme',
            subject: 'alice',
            ttlSeconds: 60,
            now: new Date(Date.now() - 3_600_000),
          })}`,
        'token expired',
        true,
      ],
      [
        '07 the wrong audience',
        async () => `Bearer ${await signHs256({ aud: 'other' })}`,
        'wrong audience',
        true,
      ],
      ['08 the wrong issuer', async () => `Bearer ${await signHs256({ iss: 'evil' })}`, 'wrong issuer', true],
      [
        '09 a token signed with another key',
        async () => `Bearer ${await signHs256({}, new Uint8Array(randomBytes(32)))}`,
        'bad signature',
        true,
      ],
      [
        '10 alg none',
        () =>
          Promise.resolve(
            `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({
              iss: ISSUER,
              aud: AUDIENCE,
              sub: 'alice',
              tenant: 'acme',
              exp: nowSeconds() + 60,
            })}.`,
          ),
        'algorithm not allowed',
        true,
      ],
      ['11 no exp claim', async () => `Bearer ${await signHs256(without('exp'))}`, 'missing exp claim', true],
      [
        '12 no sub claim',
        async () => `Bearer ${await signHs256(without('sub'))}`,
        'missing subject claim',
        true,
      ],
      [
        '13 an empty sub claim',
        async () => `Bearer ${await signHs256({ sub: '' })}`,
        'missing subject claim',
        true,
      ],
      [
        '14 no tenant claim',
        async () => `Bearer ${await signHs256(without('tenant'))}`,
        'missing tenant claim',
        true,
      ],
      [
        '15 a tenant with a slash',
        async () => `Bearer ${await signHs256({ tenant: 'acme/../root' })}`,
        'invalid tenant claim',
        true,
      ],
      [
        '16 a tenant that is a number',
        async () => `Bearer ${await signHs256({ tenant: 42 })}`,
        'invalid tenant claim',
        true,
      ],
      [
        '17 a tenant longer than 128 characters',
        async () => `Bearer ${await signHs256({ tenant: 'a'.repeat(129) })}`,
        'invalid tenant claim',
        true,
      ],
      [
        '18 roles that are not a list',
        async () => `Bearer ${await signHs256({ roles: 'operator' })}`,
        'invalid roles claim',
        true,
      ],
    ];

  it.each(cases)('rejects %s', async (_name, header, reason, present) => {
    const value = await header();
    const err = await rejection(hs256, value);
    expect(err).toMatchObject({
      name: 'AuthenticationError',
      code: 'unauthenticated',
      reason,
      tokenPresent: present,
    });
    const token = value?.split(' ')[1];
    if (token) expect(err.message).not.toContain(token);
    expect(err.cause).toBeUndefined();
  });

  it('refuses a short HMAC key', () => {
    expect(() =>
      createTokenVerifier({ kind: 'hs256', key: new Uint8Array(16), issuer: ISSUER, audience: AUDIENCE }),
    ).toThrow(/at least 32 bytes/);
  });
});

describe('dev signing key', () => {
  const dirs: string[] = [];
  const tempDir = async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sandlot-auth-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('is created once, privately, and reused', async () => {
    const dataDir = path.join(await tempDir(), 'nested', 'data');
    const first = await loadOrCreateDevKey(dataDir);
    expect(first).toHaveLength(32);
    expect(await loadOrCreateDevKey(dataDir)).toEqual(first);
    const file = path.join(dataDir, 'dev-signing-key');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64url')).toEqual(Buffer.from(first));
  });

  it('settles on one key when many callers create it at once', async () => {
    const dataDir = await tempDir();
    const keys = await Promise.all(Array.from({ length: 16 }, () => loadOrCreateDevKey(dataDir)));
    for (const key of keys) expect(key).toEqual(keys[0]);
    expect(await readdir(dataDir)).toEqual(['dev-signing-key']);
  });

  it('names the path of a corrupt key file without printing its contents', async () => {
    const dataDir = await tempDir();
    const file = path.join(dataDir, 'dev-signing-key');
    await writeFile(file, 'c2VjcmV0LWJ1dC1zaG9ydA\n', { mode: 0o600 });
    const err: unknown = await loadOrCreateDevKey(dataDir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).not.toContain('c2VjcmV0');
  });
});

describe('parseTtl', () => {
  it.each([
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['7d', 604_800],
    ['120', 120],
    ['30d', MAX_TTL_SECONDS],
  ])('reads %s as %i seconds', (text, seconds) => {
    expect(parseTtl(text)).toBe(seconds);
  });

  it.each([
    ['', /invalid TTL/],
    ['abc', /invalid TTL/],
    ['1w', /invalid TTL/],
    ['-5', /invalid TTL/],
    ['1.5h', /invalid TTL/],
    ['0', /must be positive/],
    ['31d', /maximum of 30 days/],
    [String(MAX_TTL_SECONDS + 1), /maximum of 30 days/],
  ])('rejects %j', (text, message) => {
    expect(() => parseTtl(text)).toThrow(message);
  });
});

describe('requirePrincipal middleware', () => {
  const app = new Hono<{ Variables: AuthVariables }>();
  app.onError((err, c) => (err instanceof Problem ? problemResponse(err, c.req.path) : c.text('boom', 500)));
  app.use('*', requirePrincipal(hs256));
  app.get('/whoami', (c) => c.json(c.var.principal));

  it('passes the principal to the handler', async () => {
    const res = await app.request('/whoami', { headers: { authorization: `Bearer ${await signHs256({})}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ tenantId: 'acme', subject: 'alice', operator: false });
  });

  it('answers a missing token with a 401 problem and a Bearer challenge', async () => {
    const res = await app.request('/whoami');
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="sandlot"');
    expect(await res.json()).toEqual({
      type: 'urn:sandlot:problem:unauthenticated',
      title: 'Unauthenticated',
      status: 401,
      detail: 'missing bearer token',
      instance: '/whoami',
    });
  });

  it('marks a rejected token as invalid_token and does not echo it', async () => {
    const token = await signHs256({ aud: 'other' });
    const res = await app.request('/whoami', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="sandlot", error="invalid_token"');
    const text = await res.text();
    expect(text).not.toContain(token);
    expect(JSON.parse(text)).toMatchObject({ detail: 'wrong audience' });
  });
});

describe('problem bodies', () => {
  it('keeps extension members but never lets them replace standard ones', () => {
    const body = problemBody(
      conflict('lease-held', 'Lease held', 'already leased', { leaseId: 'l1', status: 200 }),
    );
    expect(body).toEqual({
      type: 'urn:sandlot:problem:lease-held',
      title: 'Lease held',
      status: 409,
      detail: 'already leased',
      leaseId: 'l1',
    });
    expect(Object.keys(body).slice(0, 3)).toEqual(['type', 'title', 'status']);
  });
});
