// Dev tokens are signed with the embedded key and must pass the same verifier as production tokens,
// so minting refuses anything the verifier would reject rather than hand out a useless token.
import { SignJWT } from 'jose';

import { identifierSchema } from '../../machines/environment-events.ts';
import { TENANT_ID_PATTERN } from './principal.ts';

export const MAX_TTL_SECONDS = 30 * 24 * 60 * 60;

export interface DevTokenRequest {
  key: Uint8Array;
  issuer: string;
  audience: string;
  tenant: string;
  subject: string;
  operator?: boolean;
  /** Bind the token to one project and run (claims `project` and `run`). */
  runBinding?: { projectId: string; runId: string };
  ttlSeconds: number;
  /** Issue time; defaults to now. */
  now?: Date;
}

export async function mintDevToken(request: DevTokenRequest): Promise<string> {
  const { key, issuer, audience, tenant, subject, operator = false, ttlSeconds } = request;
  if (!TENANT_ID_PATTERN.test(tenant)) throw new Error(`invalid tenant id "${tenant}"`);
  if (subject === '') throw new Error('subject must not be empty');
  checkTtl(ttlSeconds, String(ttlSeconds));

  const issuedAt = Math.floor((request.now ?? new Date()).getTime() / 1000);
  const binding = request.runBinding;
  if (
    binding !== undefined &&
    !(
      identifierSchema.safeParse(binding.projectId).success &&
      identifierSchema.safeParse(binding.runId).success
    )
  ) {
    throw new Error('--project and --run must be identifiers (letters, digits, . _ -)');
  }
  const claims = {
    tenant,
    ...(operator ? { roles: ['operator'] } : {}),
    ...(binding === undefined ? {} : { project: binding.projectId, run: binding.runId }),
  };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(subject)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ttlSeconds)
    .sign(key);
}

const UNIT_SECONDS = { s: 1, m: 60, h: 60 * 60, d: 24 * 60 * 60 } as const;
const TTL = /^(\d+)([smhd]?)$/;

/** Parses `90s`, `15m`, `1h`, `7d` or a plain number of seconds. */
export function parseTtl(text: string): number {
  const match = TTL.exec(text.trim());
  if (!match) {
    throw new Error(`invalid TTL "${text}": use seconds or a number followed by s, m, h or d (e.g. 15m, 7d)`);
  }
  const unit = (match[2] || 's') as keyof typeof UNIT_SECONDS;
  const seconds = Number(match[1]) * UNIT_SECONDS[unit];
  checkTtl(seconds, text);
  return seconds;
}

function checkTtl(seconds: number, text: string): void {
  if (!Number.isSafeInteger(seconds) || seconds <= 0) throw new Error(`TTL "${text}" must be positive`);
  if (seconds > MAX_TTL_SECONDS) throw new Error(`TTL "${text}" exceeds the maximum of 30 days`);
}
