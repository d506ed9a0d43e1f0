// Verified-token caching: a token verified once is answered from the cache (not verified again)
// until its `exp` and never longer than the bounded age; a refused token is never kept; the cache
// keeps a bounded number of tokens.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AuthenticationError, createTokenVerifier } from '../../http/auth/verify.ts';

const ISSUER = 'sandlot-dev';
const AUDIENCE = 'sandlot';
const KEY = new Uint8Array(randomBytes(32));
const T0 = 1_800_000_000; // seconds

function sign(subject: string, exp: number, key: Uint8Array = KEY): Promise<string> {
  return new SignJWT({ tenant: 'acme' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(subject)
    .setExpirationTime(exp)
    .sign(key);
}

/** A verifier whose clock the test moves (seconds). */
function verifierAt(options: { maxEntries?: number; maxAgeMs?: number } = {}) {
  const clock = { seconds: T0 };
  const verifier = createTokenVerifier({
    kind: 'hs256',
    key: KEY,
    issuer: ISSUER,
    audience: AUDIENCE,
    now: () => new Date(clock.seconds * 1000),
    cache: options,
  });
  return { verifier, clock };
}

describe('verified-token cache', () => {
  it('verifies a token once and answers it from the cache afterwards', async () => {
    const { verifier } = verifierAt();
    const token = await sign('alice', T0 + 600);
    for (let i = 0; i < 5; i += 1) {
      await expect(verifier.verify(`Bearer ${token}`)).resolves.toEqual({
        tenantId: 'acme',
        subject: 'alice',
        operator: false,
      });
    }
    expect(verifier.stats).toEqual({ verified: 1, cached: 4, size: 1 });
  });

  it('still expires a cached token on time', async () => {
    const { verifier, clock } = verifierAt();
    const token = await sign('alice', T0 + 10);
    await verifier.verify(`Bearer ${token}`);
    clock.seconds = T0 + 9;
    await verifier.verify(`Bearer ${token}`);
    expect(verifier.stats).toMatchObject({ verified: 1, cached: 1 });
    // At `exp` the cache no longer answers: the token is verified again, and refused past the
    // verifier's own clock tolerance (5 s) exactly as without a cache.
    clock.seconds = T0 + 10;
    await verifier.verify(`Bearer ${token}`);
    expect(verifier.stats).toMatchObject({ verified: 2, cached: 1 });
    clock.seconds = T0 + 16;
    const refused = await verifier.verify(`Bearer ${token}`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AuthenticationError);
    expect((refused as AuthenticationError).reason).toBe('token expired');
    expect(verifier.stats).toMatchObject({ verified: 3, cached: 1, size: 0 });
  });

  it('verifies again after the bounded age, however long the token lives', async () => {
    const { verifier, clock } = verifierAt({ maxAgeMs: 60_000 });
    const token = await sign('alice', T0 + 3_600);
    await verifier.verify(`Bearer ${token}`);
    clock.seconds = T0 + 59;
    await verifier.verify(`Bearer ${token}`);
    clock.seconds = T0 + 60;
    await verifier.verify(`Bearer ${token}`);
    expect(verifier.stats).toMatchObject({ verified: 2, cached: 1 });
  });

  it('never keeps a refused token', async () => {
    const { verifier } = verifierAt();
    const forged = await sign('mallory', T0 + 600, new Uint8Array(32).fill(9));
    for (let i = 0; i < 3; i += 1) {
      const refused = await verifier.verify(`Bearer ${forged}`).catch((e: unknown) => e);
      expect((refused as AuthenticationError).reason).toBe('bad signature');
    }
    expect(verifier.stats).toEqual({ verified: 3, cached: 0, size: 0 });
  });

  it('keeps a bounded number of tokens, dropping the least recently used', async () => {
    const { verifier } = verifierAt({ maxEntries: 2 });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((s) => sign(s, T0 + 600)));
    await verifier.verify(`Bearer ${a}`);
    await verifier.verify(`Bearer ${b}`);
    await verifier.verify(`Bearer ${a}`); // a is now the most recently used
    await verifier.verify(`Bearer ${c}`); // b goes
    expect(verifier.stats).toEqual({ verified: 3, cached: 1, size: 2 });
    await verifier.verify(`Bearer ${a}`);
    await verifier.verify(`Bearer ${b}`);
    expect(verifier.stats).toEqual({ verified: 4, cached: 2, size: 2 });
  });

  it('hands out a principal no request can change for another', async () => {
    const { verifier } = verifierAt();
    const token = await sign('alice', T0 + 600);
    const first = await verifier.verify(`Bearer ${token}`);
    expect(Object.isFrozen(first)).toBe(true);
    expect(() => {
      (first as { subject: string }).subject = 'mallory';
    }).toThrow(TypeError);
    await expect(verifier.verify(`Bearer ${token}`)).resolves.toMatchObject({ subject: 'alice' });
  });
});
