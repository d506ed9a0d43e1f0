// SANDLOT_CORE_TOKEN_FILE: Environment's own Core bearer for workers. Read and checked at start in
// production only, required there when a BuildTest profile is set and the provider's workers run
// BuildTest steps; refused when empty, oversized or not one token, naming the setting and the path
// and never the file's content; read again when the file changes (a rotated projected token).
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoreTokenFileError,
  MAX_CORE_TOKEN_BYTES,
  OPAQUE_TOKEN_LIFETIME_MS,
  coreTokenExpiry,
  coreTokenFile,
} from '../../config/core-token.ts';
import { describeConfig } from '../../config/describe.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { profileDocument } from '../support/build-test-profile.ts';

const PRODUCTION = {
  DATABASE_URL: 'postgres://db/sandlot',
  SANDLOT_JWT_ISSUER: 'https://issuer.example',
  SANDLOT_JWKS_URL: 'https://issuer.example/jwks',
  SANDLOT_PROJECTS_URL: 'https://projects.example',
  SANDLOT_RUN_SELECTION_URL: 'https://selection.example',
  SANDLOT_CORE_URL: 'https://core.example/api',
};
const SECRET = 'c0re-w0rker-t0ken.s3cret-part_~+/';

let dir: string;
let profileFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandlot-core-token-'));
  profileFile = join(dir, 'build-test.json');
  await writeFile(profileFile, JSON.stringify(profileDocument()));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function fileWith(content: string | Buffer): Promise<string> {
  const path = join(dir, `t-${Math.random().toString(36).slice(2)}`);
  await writeFile(path, content);
  return path;
}

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.reason}`);
    throw error;
  }
  return [];
}

/** A JWT-shaped token (unsigned: only its `exp` is read here, Core verifies it). */
const jwt = (claims: Record<string, unknown>) =>
  [{ alg: 'RS256', typ: 'JWT' }, claims, 'signature']
    .map((part) => Buffer.from(typeof part === 'string' ? part : JSON.stringify(part)).toString('base64url'))
    .join('.');

describe('SANDLOT_CORE_TOKEN_FILE at start', () => {
  it('reads a valid file, trimmed, and shows only its path', async () => {
    const path = await fileWith(`  ${SECRET}\n`);
    const config = loadConfig({
      ...PRODUCTION,
      SANDLOT_BUILDTEST_PROFILE_FILE: profileFile,
      SANDLOT_CORE_TOKEN_FILE: path,
    });
    expect(config.coreToken?.file).toBe(path);
    expect(config.coreToken?.read()).toBe(SECRET);
    const printed = [
      JSON.stringify(config),
      JSON.stringify(describeConfig(config)),
      inspect(config, { depth: 10 }),
      inspect(config.coreToken),
    ];
    for (const text of printed) expect(text).not.toContain(SECRET);
    expect(JSON.stringify(describeConfig(config))).toContain(path);
  });

  it.each([
    ['an empty file', ''],
    ['a file of whitespace', ' \n\t\n'],
    ['a token with a space inside', `${SECRET} ${SECRET}`],
    ['a token with a newline inside', `${SECRET}\n${SECRET}`],
    ['a token with a control character inside', `${SECRET}\u0007${SECRET}`],
    ['a token with characters a bearer may not carry', `${SECRET}"${SECRET}`],
    ['a file over 16 KiB', SECRET.repeat(Math.ceil((MAX_CORE_TOKEN_BYTES + 1) / SECRET.length))],
    ['a file that is not UTF-8', Buffer.from([0xff, 0xfe, 0x41])],
  ])('refuses %s, naming the setting and the path, never the content', async (_name, content) => {
    const path = await fileWith(content);
    const found = problems({
      ...PRODUCTION,
      SANDLOT_BUILDTEST_PROFILE_FILE: profileFile,
      SANDLOT_CORE_TOKEN_FILE: path,
    });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^SANDLOT_CORE_TOKEN_FILE: /);
    expect(found[0]).toContain(path);
    expect(found[0]).not.toContain(SECRET);
    expect(found[0]).not.toContain(SECRET.slice(0, 10));
  });

  it('names a missing file by its path', () => {
    const path = join(dir, 'absent');
    expect(problems({ ...PRODUCTION, SANDLOT_CORE_TOKEN_FILE: path })).toEqual([
      `SANDLOT_CORE_TOKEN_FILE: cannot read the file ${path} (ENOENT)`,
    ]);
  });

  it('is exactly at the 16 KiB limit accepted', async () => {
    const token = 'a'.repeat(MAX_CORE_TOKEN_BYTES);
    const config = loadConfig({ ...PRODUCTION, SANDLOT_CORE_TOKEN_FILE: await fileWith(token) });
    expect(config.coreToken?.read()).toBe(token);
  });

  it('is required in production with a profile and the simulated provider (its workers run steps)', () => {
    expect(problems({ ...PRODUCTION, SANDLOT_BUILDTEST_PROFILE_FILE: profileFile })).toEqual([
      'SANDLOT_CORE_TOKEN_FILE: required in production when SANDLOT_BUILDTEST_PROFILE_FILE is set and the simulated provider runs BuildTest steps',
    ]);
  });

  it('is required on Agent Sandbox too, not without a profile, and is ignored in embedded mode', async () => {
    expect(problems(PRODUCTION)).toEqual([]);
    expect(
      problems({
        ...PRODUCTION,
        SANDLOT_BUILDTEST_PROFILE_FILE: profileFile,
        SANDLOT_PROVIDER: 'agent-sandbox',
      }),
    ).toEqual([
      'SANDLOT_CORE_TOKEN_FILE: required in production when SANDLOT_BUILDTEST_PROFILE_FILE is set and the agent-sandbox provider runs BuildTest steps',
    ]);
    // Embedded mode neither reads nor checks it: its stand-in Core authorizes by tenant.
    const embedded = loadConfig({ SANDLOT_CORE_TOKEN_FILE: await fileWith('') });
    expect(embedded.coreToken).toBeUndefined();
  });
});

describe('the token source', () => {
  it('reads the file again once it changed (a rotated token), and not before', async () => {
    const path = await fileWith(`${SECRET}\n`);
    const source = coreTokenFile(path);
    expect(source.read()).toBe(SECRET);
    await writeFile(path, 'rotated-token\n');
    // Same size or not, a new modification time is a new file.
    const later = new Date(Date.now() + 5_000);
    await utimes(path, later, later);
    expect(source.read()).toBe('rotated-token');
  });

  it('refuses a rotated file that is not a token (503), never falling back to the old one', async () => {
    const path = await fileWith(SECRET);
    const source = coreTokenFile(path);
    expect(source.read()).toBe(SECRET);
    await writeFile(path, '');
    const later = new Date(Date.now() + 5_000);
    await utimes(path, later, later);
    const error = (() => {
      try {
        source.read();
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(CoreTokenFileError);
    expect(error).toMatchObject({ code: 'core-token-unreadable', status: 503 });
    expect((error as Error).message).toBe(`SANDLOT_CORE_TOKEN_FILE: the file ${path} is empty`);
  });

  it("takes a JWT's exp as its expiry, and five minutes for an opaque token", () => {
    const now = new Date('2026-12-01T12:00:00.000Z');
    expect(coreTokenExpiry(jwt({ sub: 'sandlot', exp: 1_800_000_000 }), now)).toEqual(
      new Date(1_800_000_000_000),
    );
    for (const opaque of [SECRET, jwt({ sub: 'no-exp' }), 'a.b.c', 'x.%%%.y']) {
      expect(coreTokenExpiry(opaque, now)).toEqual(new Date(now.getTime() + OPAQUE_TOKEN_LIFETIME_MS));
    }
  });
});
