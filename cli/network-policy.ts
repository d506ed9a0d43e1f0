// `sandlot network-policy register`: the production-mode way to register a project's network policy
// generation where the verifier is our own table (the simulated and sandbox-host providers). It is
// an operator command on the database, like `sandlot migrate` and `sandlot hosts trust`, rather than
// an HTTP route: admin routes exist only in embedded mode, where we stand in for Projects and Core
// (DESIGN.md, "Decisions already taken"). It writes through the same store function and document
// rules as the embedded admin route (immutable per generation: the same document again is
// unchanged, a different one is refused). With agent-sandbox it refuses: there a provision is
// admitted only on the CiliumNetworkPolicy read back from the cluster, and a table row would be a
// registration that verifies nothing.
import { readFile, stat } from 'node:fs/promises';
import { TENANT_ID_PATTERN } from '../http/auth/principal.ts';
import { networkPolicyDocument } from '../http/routes/admin.ts';
import { MAX_INT32 } from '../lib/limits.ts';
import { identifierSchema } from '../machines/environment-events.ts';
import { putNetworkPolicy } from '../store/network-policies.ts';
import { configFromEnvironment, openDatabase } from './context.ts';
import { UsageError } from './usage.ts';

export interface RegisterOptions {
  tenant: string;
  project: string;
  generation: string;
  policy: string;
}

/** The admin route's JSON body limit, as a file size. */
const MAX_POLICY_BYTES = 1024 * 1024;
const MISSING_TABLE = '42P01';

async function readPolicy(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    if ((await stat(file)).size > MAX_POLICY_BYTES)
      throw new UsageError(`--policy ${file} is over ${MAX_POLICY_BYTES} bytes`);
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--policy ${file} cannot be read`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UsageError(`--policy ${file} is not JSON`);
  }
  const parsed = networkPolicyDocument.safeParse(json);
  if (!parsed.success) {
    const reason = parsed.error.issues[0]?.message ?? 'not a policy document';
    throw new UsageError(`--policy ${file} must be one JSON object (the policy rules): ${reason}`);
  }
  return parsed.data;
}

function parseScope(options: RegisterOptions): { tenantId: string; projectId: string; generation: number } {
  if (!TENANT_ID_PATTERN.test(options.tenant))
    throw new UsageError(`--tenant must be a tenant id (letters, digits, . _ -), got "${options.tenant}"`);
  if (!identifierSchema.safeParse(options.project).success)
    throw new UsageError(
      `--project must be an identifier (letters, digits, . _ -), got "${options.project}"`,
    );
  const generation = Number(options.generation);
  if (!/^\d+$/.test(options.generation) || generation < 1 || generation > MAX_INT32)
    throw new UsageError(`--generation must be a whole number 1-${MAX_INT32}, got "${options.generation}"`);
  return { tenantId: options.tenant, projectId: options.project, generation };
}

export async function registerNetworkPolicyCommand(options: RegisterOptions): Promise<void> {
  const scope = parseScope(options);
  const config = configFromEnvironment();
  if (config.provider.id === 'agent-sandbox') {
    throw new UsageError(
      'with SANDLOT_PROVIDER=agent-sandbox a network policy is verified only by reading back the ' +
        "project's CiliumNetworkPolicy from the sandbox namespace: apply it there (docs/kubernetes.md)",
    );
  }
  if (config.mode !== 'production') {
    throw new UsageError(
      'embedded mode registers policies through its admin route: PUT /admin/tenants/{tenantId}/projects/{projectId}/network-policies/{generation}',
    );
  }
  const policy = await readPolicy(options.policy);
  const db = await openDatabase(config);
  let result: Awaited<ReturnType<typeof putNetworkPolicy>>;
  try {
    result = await putNetworkPolicy(db, { ...scope, policy });
  } catch (error) {
    if ((error as { code?: unknown }).code === MISSING_TABLE)
      throw new Error('the database has no network_policies table: run `sandlot migrate` first');
    throw error;
  } finally {
    await db.close();
  }
  const what = `network policy generation ${scope.generation} for ${scope.tenantId}/${scope.projectId}`;
  if (result === 'conflict') {
    throw new Error(
      `a different policy is already registered under generation ${scope.generation}; generations are immutable: register the new rules as generation ${scope.generation + 1}`,
    );
  }
  process.stdout.write(
    result === 'created' ? `registered ${what}\n` : `${what} is already registered, identical\n`,
  );
}
