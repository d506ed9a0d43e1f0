// Dev tokens for commands that talk to a running embedded `sandlot serve` (`demo`, `envs`,
// `attempts`): signed with the dev key in SANDLOT_DATA_DIR, as `sandlot token` signs them, so the
// command must share the server's data directory. The key must already exist: creating a new one
// here would only mint tokens the server rejects.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { loadOrCreateDevKey } from '../http/auth/dev-key.ts';
import { mintDevToken } from '../http/auth/mint.ts';
import type { Config } from '../config/types.ts';
import { dataDirOf } from './context.ts';
import { DemoError } from './demo-client.ts';

/** The user `sandlot demo` grants and acts as, and the one `envs` acts as by default. */
export const DEMO_SUBJECT = 'demo-user';

export async function devKey(dataDir: string): Promise<Uint8Array> {
  const file = path.join(dataDir, 'dev-signing-key');
  try {
    await access(file);
  } catch {
    throw new DemoError(
      `no dev signing key at ${file}. Run this from the directory \`sandlot serve\` runs in, ` +
        "with the same SANDLOT_DATA_DIR, so its tokens are signed with the server's key",
    );
  }
  return loadOrCreateDevKey(dataDir);
}

/** A minter for one tenant: `(subject, operator)` → a 15-minute dev token. */
export async function devMinter(
  config: Config,
  tenant: string,
): Promise<(subject: string, operator: boolean) => Promise<string>> {
  const key = await devKey(dataDirOf(config));
  return (subject, operator) =>
    mintDevToken({
      key,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      tenant,
      subject,
      operator,
      ttlSeconds: 15 * 60,
    });
}
