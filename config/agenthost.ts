// The immutable AgentHost configuration, read once at start: the receiver's configure path and
// audience, the source runtime profiles a profile resolve copies (SANDLOT_AGENTHOST_CONFIG_FILE),
// and the `service-backend-ca` roots a Host's certificate must chain to (SANDLOT_AGENTHOST_CA_FILE).
// Profiles are opaque JSON, but never credentials: a field named like one (token, secret, password,
// apiKey…) or a value shaped like one (a private key block, a bearer header) at any depth is refused
// at start, naming the field's path and never its value. The result is frozen: a changed profile
// takes a restart, which the stored mappings notice (actors/runtime-profiles/service.ts).
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** A source profile ID: an identifier, usable as one path segment. */
export const PROFILE_ID = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

const PROFILE_ID_MESSAGE = 'profile IDs are identifiers (a letter, then up to 63 of A-Z a-z 0-9 _ -)';

export type ProfileDocument = Readonly<Record<string, unknown>>;

export interface AgentHostConfiguration {
  receiver: { configurePath: string; audience: string };
  profiles: Readonly<Record<string, ProfileDocument>>;
}

const MAX_FILE_BYTES = 1024 * 1024;

/** Whole words (after splitting camelCase, snake_case and kebab-case) that name a credential. */
const CREDENTIAL_WORDS = new Set([
  'token',
  'secret',
  'secrets',
  'password',
  'passwd',
  'passphrase',
  'credential',
  'credentials',
  'authorization',
  'cookie',
  'bearer',
  'apikey',
  'privatekey',
]);
const CREDENTIAL_PAIRS = new Set(['api key', 'private key', 'access key', 'signing key', 'session key']);
const CREDENTIAL_VALUE = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /^\s*bearer\s+\S/i,
  /^\s*basic\s+[A-Za-z0-9+/=]{8,}/i,
];

function words(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

export function namesCredential(key: string): boolean {
  const parts = words(key);
  if (CREDENTIAL_WORDS.has(parts.join(''))) return true;
  return parts.some((w, i) => CREDENTIAL_WORDS.has(w) || CREDENTIAL_PAIRS.has(`${w} ${parts[i + 1] ?? ''}`));
}

/** Every path under `value` that is named or shaped like a credential. */
export function credentialPaths(value: unknown, path: readonly string[] = []): string[][] {
  if (typeof value === 'string') return CREDENTIAL_VALUE.some((re) => re.test(value)) ? [[...path]] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => credentialPaths(item, [...path, String(i)]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) =>
    namesCredential(key) ? [[...path, key]] : credentialPaths(item, [...path, key]),
  );
}

const configurePath = z
  .string()
  .regex(/^\/[A-Za-z0-9._~/-]*$/, 'expected an absolute path without query or fragment')
  .refine((p) => !p.split('/').some((s) => s === '.' || s === '..') && !p.includes('//'), {
    error: 'expected a normalized path (no "//", "." or ".." segments)',
  });

const fileSchema = z.strictObject({
  receiver: z.strictObject({
    configurePath,
    audience: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[\x21-\x7e]+$/, 'expected printable ASCII without spaces'),
  }),
  profiles: z
    .record(
      z.string().regex(PROFILE_ID, PROFILE_ID_MESSAGE),
      z.record(z.string(), z.unknown(), { error: 'a profile is a JSON object' }),
    )
    .refine((profiles) => Object.keys(profiles).length > 0, { error: 'expected at least one profile' }),
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

type Issues = { issues: z.core.$ZodRawIssue[] };

function fail(ctx: Issues, input: string, message: string): typeof z.NEVER {
  ctx.issues.push({ code: 'custom', input, message });
  return z.NEVER;
}

function readText(path: string, ctx: Issues): string | undefined {
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) {
      fail(ctx, path, `the file exceeds ${MAX_FILE_BYTES} bytes`);
      return undefined;
    }
    return bytes.toString('utf8');
  } catch (error) {
    fail(ctx, path, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

/** The env variable's schema: a path, read and validated now; issues name fields, never values. */
export const agentHostConfigFile = z.string().transform((path, ctx): AgentHostConfiguration => {
  const text = readText(path, ctx);
  if (text === undefined) return z.NEVER;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return fail(ctx, path, 'the file is not valid JSON');
  }
  // Scanned whatever else is wrong, so one start-up names every problem.
  const profiles =
    typeof document === 'object' && document !== null
      ? (document as { profiles?: unknown }).profiles
      : undefined;
  const leaks = credentialPaths(profiles, ['profiles']);
  for (const leak of leaks) {
    fail(ctx, path, `${leak.join('.')}: looks like a credential; runtime profiles carry no credentials`);
  }
  const parsed = fileSchema.safeParse(document);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const message = issue.code === 'invalid_key' ? PROFILE_ID_MESSAGE : issue.message;
      fail(ctx, path, `${issue.path.map(String).join('.') || '(file)'}: ${message}`);
    }
  }
  if (!parsed.success || leaks.length > 0) return z.NEVER;
  return deepFreeze(parsed.data);
});

/** The env variable's schema: a PEM bundle of CA certificates only (never a private key). */
const caCertificatesFile = z.string().transform((path, ctx): string => {
  const text = readText(path, ctx);
  if (text === undefined) return z.NEVER;
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    return fail(ctx, path, 'the file holds no PEM certificate');
  if (/PRIVATE KEY-----/.test(text)) {
    return fail(ctx, path, 'the file holds a private key; give only the CA certificates');
  }
  return text;
});

/** SANDLOT_AGENTHOST_CA_FILE: the roots an AgentHost's certificate must chain to. */
export const agentHostCaFile = caCertificatesFile;

/**
 * SANDLOT_SERVICE_BACKEND_CA_FILE: the `service-backend-ca` roots the internal services' (Core,
 * Events, Projects, run selection) certificates must chain to, pinned instead of the system store.
 */
export const serviceBackendCaFile = caCertificatesFile;
