// `sandlot envs list|show|release|abandon|reconcile` and `sandlot attempts`: the Environment routes
// through the API of a running server (cli/remote.ts), so they work beside an embedded `serve`,
// which keeps the embedded database to itself.
//
// An Environment is addressed as the API addresses it, `<project>/<run>/<environmentId>`; a bare
// `env_…` with --project is found by paging through the project's list. Output is a table unless
// --json: then the list is JSON lines (one Environment a line, for jq and `while read`) and every
// other answer one JSON document. Off a terminal the table is printed too; scripts ask for --json.
import { randomBytes } from 'node:crypto';
import type { EnvironmentSummary, ProviderAttempt, SandboxLease } from '../http/typed-client/api.ts';
import { connect, expect, RemoteError, type Remote, type RemoteOptions } from './remote.ts';
import { table } from './table.ts';
import { UsageError } from './usage.ts';

export interface Address {
  projectId: string;
  runId: string;
  environmentId: string;
}

const UNRESOLVED = new Set(['Pending', 'Dispatched', 'Unknown']);

export interface ListOptions extends RemoteOptions {
  project: string;
  run?: string;
  state?: 'Registered' | 'Releasing' | 'Released';
  sandboxState?: NonNullable<EnvironmentSummary['sandboxState']>;
  unresolved?: boolean;
  pendingCleanups?: boolean;
  updatedSince?: string;
  limit?: number;
  cursor?: string;
  all?: boolean;
  json: boolean;
}

export interface TargetOptions extends RemoteOptions {
  project?: string;
  json: boolean;
}

const print = (text: string): void => void process.stdout.write(`${text}\n`);
const dash = (value: string | number | null | undefined) =>
  value === null || value === undefined ? '-' : String(value);

export function environmentTable(environments: readonly EnvironmentSummary[]): string {
  return table(
    ['ENVIRONMENT', 'PROJECT', 'RUN', 'STATE', 'SANDBOX', 'GEN', 'REV', 'UNRESOLVED', 'CLEANUPS', 'UPDATED'],
    environments.map((e) => [
      e.environmentId,
      e.projectId,
      e.runId,
      e.quarantined ? `${e.state} (quarantined)` : e.state,
      dash(e.sandboxState),
      String(e.lifecycleGeneration),
      String(e.revision),
      String(e.unresolvedAttempts),
      String(e.pendingCleanups),
      e.updatedAt,
    ]),
  );
}

export function attemptTable(attempts: readonly ProviderAttempt[]): string {
  return table(
    ['ATTEMPT', 'KIND', 'STATE', 'GEN', 'FENCE', 'FENCING', 'CREATED', 'RESOLVED', 'DETAIL'],
    attempts.map((a) => [
      a.attemptId,
      a.kind,
      a.state,
      String(a.resourceGeneration),
      String(a.providerFence),
      String(a.fencingGeneration),
      a.createdAt,
      dash(a.resolvedAt),
      a.error === null ? (a.resolution ?? '') : `${a.error.code}: ${a.error.message}`,
    ]),
  );
}

export async function listEnvironments(options: ListOptions): Promise<void> {
  if (options.run !== undefined && options.run.trim() === '') throw new UsageError('--run is empty');
  const remote = await connect(options);
  const query = {
    ...(options.state === undefined ? {} : { lifecycleState: options.state }),
    ...(options.sandboxState === undefined ? {} : { sandboxState: options.sandboxState }),
    ...(options.unresolved === undefined ? {} : { hasUnresolvedAttempts: options.unresolved }),
    ...(options.pendingCleanups === undefined ? {} : { hasPendingCleanups: options.pendingCleanups }),
    ...(options.updatedSince === undefined ? {} : { updatedSince: options.updatedSince }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  };
  const shown: EnvironmentSummary[] = [];
  let cursor = options.cursor;
  for (;;) {
    const page = await listPage(remote, options.project, options.run, {
      ...query,
      ...(cursor === undefined ? {} : { cursor }),
    });
    if (options.json) for (const e of page.environments) print(JSON.stringify(e));
    else shown.push(...page.environments);
    cursor = page.nextCursor ?? undefined;
    if (cursor === undefined) break;
    if (options.all !== true) {
      // The answer stays on stdout; how to go on is a hint for the person reading it.
      process.stderr.write(`more: --cursor ${cursor} (or --all)\n`);
      break;
    }
  }
  if (!options.json) print(environmentTable(shown));
}

async function listPage(
  remote: Remote,
  projectId: string,
  runId: string | undefined,
  query: {
    lifecycleState?: NonNullable<ListOptions['state']>;
    sandboxState?: NonNullable<ListOptions['sandboxState']>;
    hasUnresolvedAttempts?: boolean;
    hasPendingCleanups?: boolean;
    updatedSince?: string;
    limit?: number;
    cursor?: string;
  },
) {
  const answer =
    runId === undefined
      ? await remote.client.call('get', '/api/projects/{projectId}/environments', {
          path: { projectId },
          query,
        })
      : await remote.client.call('get', '/api/projects/{projectId}/runs/{runId}/environments', {
          path: { projectId, runId },
          query,
        });
  return expect(answer, [200]);
}

/** `<project>/<run>/<environmentId>`, or a bare `env_…` looked up in --project's list. */
export async function resolve(remote: Remote, target: string, project: string | undefined): Promise<Address> {
  const parts = target.split('/');
  if (parts.length === 3 && parts.every((p) => p !== '')) {
    const [projectId = '', runId = '', environmentId = ''] = parts;
    return { projectId, runId, environmentId };
  }
  if (parts.length !== 1 || !target.startsWith('env_'))
    throw new UsageError(
      `an Environment is <project>/<run>/<environmentId> or env_… with --project, got "${target}"`,
    );
  if (project === undefined)
    throw new UsageError(
      `${target} alone does not say where it is: add --project, or write <project>/<run>/${target}`,
    );
  let cursor: string | undefined;
  do {
    const page = await listPage(remote, project, undefined, {
      limit: 200,
      ...(cursor === undefined ? {} : { cursor }),
    });
    const found = page.environments.find((e) => e.environmentId === target);
    if (found !== undefined) return { projectId: found.projectId, runId: found.runId, environmentId: target };
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  throw new RemoteError(`no Environment ${target} in project ${project} that this token may read`);
}

export const pathOf = (a: Address) => ({
  projectId: a.projectId,
  runId: a.runId,
  environmentId: a.environmentId,
});

/** The current lease, or null when the Environment has none (404 lease-not-found). */
async function leaseOf(remote: Remote, address: Address): Promise<SandboxLease | null> {
  const answer = await remote.client.call(
    'get',
    '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox',
    {
      path: pathOf(address),
    },
  );
  if (answer.status === 404 && /lease-not-found/.test(JSON.stringify(answer.body))) return null;
  return expect(answer, [200]).lease;
}

async function requireLease(remote: Remote, address: Address, action: string): Promise<SandboxLease> {
  const lease = await leaseOf(remote, address);
  if (lease === null) throw new RemoteError(`${address.environmentId} has no sandbox lease to ${action}`);
  return lease;
}

export async function showEnvironment(target: string, options: TargetOptions): Promise<void> {
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  const lifecycle = expect(
    await remote.client.call(
      'get',
      '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/lifecycle',
      {
        path: pathOf(address),
      },
    ),
    [200],
  );
  const lease = await leaseOf(remote, address);
  if (options.json) return print(JSON.stringify({ environment: lifecycle, lease }, null, 2));
  const rows: [string, string][] = [
    ['environment', lifecycle.environmentId],
    ['tenant/project/run', `${lifecycle.tenantId}/${lifecycle.projectId}/${lifecycle.runId}`],
    ['state', lifecycle.state],
    ['lifecycle generation', String(lifecycle.lifecycleGeneration)],
    ['revision', String(lifecycle.revision)],
    ['created / updated', `${lifecycle.createdAt} / ${lifecycle.updatedAt}`],
  ];
  if (lease === null) rows.push(['lease', 'none']);
  else
    rows.push(
      ['lease', `${lease.state}${lease.current ? '' : ' (not current)'}, phase ${dash(lease.phase)}`],
      ['operation', lease.operationId],
      [
        'generation / fence / fencing',
        `${lease.resourceGeneration} / ${lease.providerFence} / ${lease.currentFencingGeneration}`,
      ],
      ['resource', dash(lease.resourceId)],
      ['expires', dash(lease.expiresAt)],
      ['failure', lease.failure === null ? '-' : `${lease.failure.code}: ${lease.failure.message}`],
    );
  print(rows.map(([k, v]) => `${k.padEnd(28)} ${v}`).join('\n'));
}

export interface ReleaseOptions extends TargetOptions {
  expectedGeneration?: number;
  idempotencyKey?: string;
}

const freshKey = (action: string) => `cli-${action}-${randomBytes(6).toString('hex')}`;

export async function releaseEnvironment(target: string, options: ReleaseOptions): Promise<void> {
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  // Without --expected-generation the current one is read: the release then means "as it stands now".
  const expectedLifecycleGeneration =
    options.expectedGeneration ??
    expect(
      await remote.client.call(
        'get',
        '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/lifecycle',
        {
          path: pathOf(address),
        },
      ),
      [200],
    ).lifecycleGeneration;
  const answer = expect(
    await remote.client.call(
      'post',
      '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/release',
      {
        path: pathOf(address),
        body: { expectedLifecycleGeneration, idempotencyKey: options.idempotencyKey ?? freshKey('release') },
      },
    ),
    [200, 202],
  );
  print(
    options.json
      ? JSON.stringify(answer, null, 2)
      : `${answer.environmentId} ${answer.state} (revision ${answer.revision})`,
  );
}

export interface FenceOptions extends TargetOptions {
  resourceGeneration?: number;
  providerFence?: number;
  idempotencyKey?: string;
}

/** The fences to send: the ones given, else the current lease's. */
async function fencesOf(remote: Remote, address: Address, options: FenceOptions, action: string) {
  const given = options.resourceGeneration !== undefined && options.providerFence !== undefined;
  if ((options.resourceGeneration === undefined) !== (options.providerFence === undefined))
    throw new UsageError('--resource-generation and --provider-fence go together');
  const lease = given && action !== 'reconcile' ? null : await requireLease(remote, address, action);
  return {
    operationId: lease?.operationId ?? '',
    resourceGeneration: options.resourceGeneration ?? lease?.resourceGeneration ?? 0,
    providerFence: options.providerFence ?? lease?.providerFence ?? 0,
  };
}

function printLease(
  lease: { environmentId: string; state: string; operationId: string; currentFencingGeneration: number },
  json: boolean,
) {
  print(
    json
      ? JSON.stringify(lease, null, 2)
      : `${lease.environmentId} lease ${lease.operationId} ${lease.state} (fencing ${lease.currentFencingGeneration})`,
  );
}

export async function abandonLease(target: string, options: FenceOptions): Promise<void> {
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  const { resourceGeneration, providerFence } = await fencesOf(remote, address, options, 'abandon');
  const lease = expect(
    await remote.client.call(
      'post',
      '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/abandon',
      {
        path: pathOf(address),
        body: {
          resourceGeneration,
          providerFence,
          idempotencyKey: options.idempotencyKey ?? freshKey('abandon'),
        },
      },
    ),
    [202],
  );
  printLease(lease, options.json);
}

export async function reconcileLease(target: string, options: FenceOptions): Promise<void> {
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  const fences = await fencesOf(remote, address, options, 'reconcile');
  const lease = expect(
    await remote.client.call(
      'post',
      '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/reconcile',
      {
        path: pathOf(address),
        body: fences,
      },
    ),
    [200, 202],
  );
  printLease(lease, options.json);
}

export interface AttemptsOptions extends TargetOptions {
  unresolved: boolean;
  operation?: string;
}

export async function listAttempts(target: string, options: AttemptsOptions): Promise<void> {
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  const operationId =
    options.operation ?? (await requireLease(remote, address, 'list attempts of')).operationId;
  const answer = expect(
    await remote.client.call(
      'get',
      '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/operations/{operationId}/provider-attempts',
      { path: { ...pathOf(address), operationId } },
    ),
    [200],
  );
  const attempts = options.unresolved
    ? answer.attempts.filter((a) => UNRESOLVED.has(a.state))
    : answer.attempts;
  print(options.json ? JSON.stringify({ operationId, attempts }, null, 2) : attemptTable(attempts));
}
