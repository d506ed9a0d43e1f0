import { loadOrCreateDevKey } from '../http/auth/dev-key.ts';
import { mintDevToken, parseTtl } from '../http/auth/mint.ts';
import { configFromEnvironment, dataDirOf } from './context.ts';
import { UsageError } from './usage.ts';

export interface TokenOptions {
  tenant: string;
  sub: string;
  admin: boolean;
  ttl: string;
  project?: string;
  run?: string;
}

/** Prints a token signed with the embedded dev key. Reads only the key file, so it works while `serve` runs. */
export async function tokenCommand(options: TokenOptions): Promise<void> {
  if ((options.project === undefined) !== (options.run === undefined))
    throw new UsageError('--project and --run go together: a run-bound token names both');
  const config = configFromEnvironment();
  if (config.mode !== 'embedded') {
    throw new UsageError(
      'dev tokens exist only in embedded mode; production tokens come from your identity provider',
    );
  }
  let ttlSeconds: number;
  try {
    ttlSeconds = parseTtl(options.ttl);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const key = await loadOrCreateDevKey(dataDirOf(config));
  const token = await mintDevToken({
    key,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    tenant: options.tenant,
    subject: options.sub,
    operator: options.admin,
    ...(options.project !== undefined && options.run !== undefined
      ? { runBinding: { projectId: options.project, runId: options.run } }
      : {}),
    ttlSeconds,
  });
  process.stdout.write(`${token}\n`);
}
