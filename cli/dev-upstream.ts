// `sandlot dev upstream` and `sandlot dev token`: trying production mode on one machine. The first
// generates an ES256 key pair, serves the stand-ins (cli/upstream-stand-ins.ts) on 127.0.0.1 and
// prints the `export SANDLOT_…=…` lines production mode needs (also written to `<dir>/env` to
// source); the second signs a token with the key the first wrote to `<dir>/upstream-key.json`
// (mode 0600). The private key is only ever in that file: never printed, never in the env file.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { z } from 'zod';
import { TENANT_ID_PATTERN } from '../http/auth/principal.ts';
import { parseTtl } from '../http/auth/mint.ts';
import { identifierSchema } from '../machines/environment-events.ts';
import { simulatedIdentity } from '../providers/simulated/identity.ts';
import { startUpstreamStandIns } from './upstream-stand-ins.ts';
import { UsageError } from './usage.ts';

export const DEV_ISSUER = 'sandlot-dev-upstream';
export const DEV_AUDIENCE = 'sandlot';
const KEY_FILE = 'upstream-key.json';
const KID = 'sandlot-dev-upstream-1';

export interface UpstreamOptions {
  port: number;
  dir: string;
  tenant: string;
  project: string;
  run: string;
  optionsRevision: string;
}

const keyFile = z.strictObject({
  kid: z.string(),
  issuer: z.string(),
  audience: z.string(),
  tenant: z.string(),
  privateJwk: z.record(z.string(), z.unknown()),
});

/** One line a POSIX shell reads back as exactly `value`. */
const exportLine = (name: string, value: string) => `export ${name}='${value.replaceAll("'", `'\\''`)}'`;

function checkScope(options: UpstreamOptions): void {
  if (!TENANT_ID_PATTERN.test(options.tenant))
    throw new UsageError(`--tenant must be a tenant id (letters, digits, . _ -), got "${options.tenant}"`);
  for (const [flag, value] of [
    ['--project', options.project],
    ['--run', options.run],
  ] as const) {
    if (!identifierSchema.safeParse(value).success)
      throw new UsageError(`${flag} must be an identifier (letters, digits, . _ -), got "${value}"`);
  }
}

/** Serves until SIGTERM or SIGINT; stdout carries the exports, then the listening line. */
export async function devUpstreamCommand(options: UpstreamOptions): Promise<void> {
  checkScope(options);
  const dir = resolve(process.cwd(), options.dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: KID, alg: 'ES256', use: 'sig' };
  const stored = {
    kid: KID,
    issuer: DEV_ISSUER,
    audience: DEV_AUDIENCE,
    tenant: options.tenant,
    privateJwk: await exportJWK(privateKey),
  };
  await writeFile(join(dir, KEY_FILE), `${JSON.stringify(stored)}\n`, { mode: 0o600 });

  const standIns = await startUpstreamStandIns(
    {
      tenant: options.tenant,
      project: options.project,
      run: options.run,
      candidate: { ...simulatedIdentity(options.optionsRevision), exclusive: true },
    },
    publicJwk,
    options.port,
  );
  const exports = [
    exportLine('SANDLOT_JWT_ISSUER', DEV_ISSUER),
    exportLine('SANDLOT_JWT_AUDIENCE', DEV_AUDIENCE),
    exportLine('SANDLOT_JWKS_URL', standIns.jwksUrl),
    exportLine('SANDLOT_PROJECTS_URL', standIns.projectsUrl),
    exportLine('SANDLOT_RUN_SELECTION_URL', standIns.runSelectionUrl),
  ].join('\n');
  await writeFile(join(dir, 'env'), `${exports}\n`, { mode: 0o600 });
  process.stdout.write(
    `${exports}\n` +
      `# allows tenant ${options.tenant}, project ${options.project}, run ${options.run} (simulated provider)\n` +
      `# the same lines are in ${join(dir, 'env')}; tokens: sandlot dev token --dir ${options.dir} --sub alice\n` +
      `sandlot dev upstream listening on ${standIns.baseUrl}\n`,
  );
  const stop = () => {
    standIns.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

export interface DevTokenOptions {
  dir: string;
  sub: string;
  tenant?: string;
  admin: boolean;
  ttl: string;
}

/** Prints a token signed with the key `sandlot dev upstream` wrote (which must be the running one). */
export async function devTokenCommand(options: DevTokenOptions): Promise<void> {
  const path = join(resolve(process.cwd(), options.dir), KEY_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`no key at ${path}: start \`sandlot dev upstream --dir ${options.dir}\` first`);
  }
  let parsed: z.infer<typeof keyFile>;
  try {
    parsed = keyFile.parse(JSON.parse(text));
  } catch {
    throw new Error(`${path} is not a key file \`sandlot dev upstream\` wrote`);
  }
  const tenant = options.tenant ?? parsed.tenant;
  if (!TENANT_ID_PATTERN.test(tenant)) throw new UsageError(`--tenant must be a tenant id, got "${tenant}"`);
  if (options.sub === '' || /\s/.test(options.sub)) throw new UsageError('--sub must be one word');
  let ttlSeconds: number;
  try {
    ttlSeconds = parseTtl(options.ttl);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const key = await importJWK(parsed.privateJwk as JWK, 'ES256');
  const token = await new SignJWT({ tenant, ...(options.admin ? { roles: ['operator'] } : {}) })
    .setProtectedHeader({ alg: 'ES256', kid: parsed.kid, typ: 'JWT' })
    .setIssuer(parsed.issuer)
    .setAudience(parsed.audience)
    .setSubject(options.sub)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(key);
  process.stdout.write(`${token}\n`);
}
