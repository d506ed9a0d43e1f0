// `sandlot demo`: one sandbox lease, start to finish, against a running embedded `sandlot serve`,
// over plain HTTP like any client. Tokens are minted with the dev key exactly as `sandlot token`
// does (SANDLOT_DATA_DIR), so the demo must share the server's data directory. It grants a demo user,
// writes the run selection from GET /admin/provider, registers a network policy, registers an
// Environment under a fresh run, creates a Workspace, provisions, waits for Active, checks
// readyForDispatch (phase configured: the AgentHost handshake), reads the placement projection,
// with --build-test runs one version 2 BuildTest command on the lease (cli/demo-build-test.ts),
// with --suspend-resume suspends the lease and resumes it on a new one (cli/demo-suspend-resume.ts),
// releases the Environment, waits for Released, and prints the provider attempts and the
// Environment's journal as timelines.
import { randomBytes } from 'node:crypto';
import { configFromEnvironment, dataDirOf } from './context.ts';
import { UsageError } from './usage.ts';
import { Client, DemoError, output, pad, seconds, waitFor } from './demo-client.ts';
import { buildTestDemo } from './demo-build-test.ts';
import { suspendResumeDemo } from './demo-suspend-resume.ts';
import { DEMO_SUBJECT, devMinter } from './local-token.ts';

const SUBJECT = DEMO_SUBJECT;
const POLICY_GENERATION = 1;

interface Lease {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  state: string;
  phase: string | null;
  resourceId: string | null;
  failure: { code: string; message: string } | null;
}

interface Lifecycle {
  environmentId: string;
  lifecycleGeneration: number;
  state: string;
  revision: number;
}

interface Attempt {
  attemptId: string;
  kind: string;
  state: string;
  resourceGeneration: number;
  providerFence: number;
  fencingGeneration: number;
  createdAt: string;
  dispatchedAt: string | null;
  deadlineAt: string | null;
  resolvedAt: string | null;
  resolution: string | null;
  error: { code: string; message: string } | null;
  receipt: unknown;
}

function timeline(attempts: Attempt[]): string[] {
  interface Moment {
    at: number;
    order: number;
    attempt: Attempt;
    what: string;
    detail: string;
  }
  const moments: Moment[] = [];
  for (const a of attempts) {
    const fences = `gen ${a.resourceGeneration} fence ${a.providerFence} fencing ${a.fencingGeneration}`;
    moments.push({ at: Date.parse(a.createdAt), order: 0, attempt: a, what: 'opened', detail: fences });
    if (a.dispatchedAt !== null) {
      const deadline =
        a.deadlineAt === null ? '' : `deadline +${Date.parse(a.deadlineAt) - Date.parse(a.dispatchedAt)} ms`;
      moments.push({
        at: Date.parse(a.dispatchedAt),
        order: 1,
        attempt: a,
        what: 'dispatched',
        detail: deadline,
      });
    }
    if (a.resolvedAt !== null) {
      const detail = [a.state, a.resolution, a.error === null ? null : `${a.error.code}: ${a.error.message}`]
        .filter((part) => part !== null && part !== '')
        .join(', ');
      moments.push({ at: Date.parse(a.resolvedAt), order: 2, attempt: a, what: 'resolved', detail });
    } else if (a.state === 'Unknown') {
      moments.push({
        at: Number.POSITIVE_INFINITY,
        order: 2,
        attempt: a,
        what: 'unknown',
        detail: a.error?.code ?? '',
      });
    }
  }
  moments.sort((x, y) => x.at - y.at || x.order - y.order);
  const first = moments[0]?.at ?? 0;
  // `<operationId>.<kind>.<seq>`, or `<operationId>.describe.<uuid>` for an inspection.
  const name = (a: Attempt) => {
    const [, kind = a.kind, rest = ''] = a.attemptId.split('.');
    return `${kind}.${rest.slice(0, 8)}`;
  };
  return moments.map((m) => {
    const offset = Number.isFinite(m.at) ? `+${m.at - first} ms` : 'open';
    return `  ${offset.padStart(9)}  ${pad(name(m.attempt), 17)} ${pad(m.what, 10)} ${m.detail}`.trimEnd();
  });
}

export interface DemoOptions {
  url: string;
  tenant: string;
  project: string;
  /** Seconds. */
  timeout: string;
  /** Also run one version 2 BuildTest command on the Active lease (needs a profile). */
  buildTest?: boolean;
  /** Also suspend the Active lease and resume it, Core played through the embedded admin routes. */
  suspendResume?: boolean;
}

export async function demoCommand(options: DemoOptions): Promise<void> {
  let base: URL;
  try {
    base = new URL(options.url);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new UsageError(`--url must be an http:// or https:// URL, got "${options.url}"`);
  }
  const timeoutMs = Number(options.timeout) * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new UsageError(`--timeout must be a positive number of seconds, got "${options.timeout}"`);
  const config = configFromEnvironment();
  if (config.mode !== 'embedded') {
    throw new UsageError('the demo mints dev tokens, which exist only in embedded mode (unset DATABASE_URL)');
  }

  const out = output(process.stdout);
  const url = base.toString().replace(/\/$/, '');
  const client = new Client(url);
  const { tenant } = options;
  // A resume moves the project's network policy generation on, and only the newest verifies: a
  // project of its own keeps later demos in --project (which register generation 1) working.
  const project =
    options.suspendResume === true ? `${options.project}-${randomBytes(3).toString('hex')}` : options.project;

  // Is anything there, and is it Sandlot?
  const health = await client.call<{ status?: string }>('health check', 'GET', 'healthz', null);
  if (health.body.status !== 'ok') throw new DemoError(`${url} answers, but not like a Sandlot server`);

  const dataDir = dataDirOf(config);
  const mint = await devMinter(config, tenant);
  const operator = await mint('demo-operator', true);
  const user = await mint(SUBJECT, false);
  out.line(`sandlot demo against ${url} (tenant ${tenant}, project ${project}; dev key in ${dataDir})`);

  let provider: { status: number; body: Record<string, unknown> };
  try {
    provider = await client.call<Record<string, unknown>>('read provider', 'GET', 'admin/provider', operator);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message.includes('HTTP 401'))
      throw new DemoError(
        `${url} rejected a token signed with the dev key in ${dataDir}: the server uses another ` +
          'SANDLOT_DATA_DIR (run the demo with the same one, from the same directory)',
      );
    if (message.includes('HTTP 404'))
      throw new DemoError(
        `${url} has no admin routes: it runs in production mode. The demo needs an embedded \`sandlot serve\``,
      );
    throw error;
  }

  const admin = `admin/tenants/${tenant}/projects/${project}`;
  const permissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'];
  await client.call('grant', 'PUT', `${admin}/grants/${SUBJECT}`, operator, { permissions });
  out.line(`✓ granted ${SUBJECT} ${permissions.join(', ')}`);

  const run = `demo-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  await client.call('run selection', 'PUT', `${admin}/runs/${run}/selection`, operator, {
    candidates: [{ ...provider.body, exclusive: true }],
  });
  out.line(
    `✓ run ${run} selects ${String(provider.body['providerId'])} ${String(provider.body['adapterVersion'])} ` +
      `(options revision ${String(provider.body['optionsRevision'])}), exclusive`,
  );

  await client.call('network policy', 'PUT', `${admin}/network-policies/${POLICY_GENERATION}`, operator, {
    policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] },
  });
  out.line(`✓ network policy generation ${POLICY_GENERATION} registered`);

  const environments = `api/projects/${project}/runs/${run}/environments`;
  const registered = await client.call<Lifecycle>('register', 'POST', environments, user, {
    idempotencyKey: 'demo',
  });
  const env = `${environments}/${registered.body.environmentId}`;
  out.line(`✓ Environment ${registered.body.environmentId} ${registered.body.state}`);

  const volume = await client.call<{
    volumeId: string;
    resourceGeneration: number;
    dataGeneration: number;
    state: string;
  }>('workspace', 'POST', `${env}/workspace-volumes`, user, { idempotencyKey: 'demo-workspace' });
  const { volumeId, resourceGeneration, dataGeneration } = volume.body;
  out.line(
    `✓ Workspace ${volumeId} ${volume.body.state} (generation ${resourceGeneration}/${dataGeneration})`,
  );

  const provisionStarted = Date.now();
  const provisioned = await client.call<Lease>('provision', 'POST', `${env}/sandbox/provision`, user, {
    idempotencyKey: 'demo-provision',
    workspace: { volumeId, resourceGeneration, dataGeneration, mountPath: '/workspace', readOnly: false },
    networkPolicyGeneration: POLICY_GENERATION,
  });
  const operationId = provisioned.body.operationId;
  out.line(
    `✓ provision accepted: operation ${operationId}, resource generation ` +
      `${provisioned.body.resourceGeneration}, provider fence ${provisioned.body.providerFence}`,
  );

  const readLease = async () =>
    // Long-poll: the server answers once the Environment changes (or after 2 s), not every poll.
    (await client.call<{ lease: Lease }>('read sandbox', 'GET', `${env}/sandbox?wait=2s`, user)).body.lease;
  const leaseStatus = (lease: Lease) => ({
    text: `${pad(lease.state, 22)} phase ${pad(lease.phase ?? '-', 11)}`,
    key: `${lease.state}/${lease.phase ?? '-'}`,
  });
  const shown = leaseStatus(provisioned.body);
  out.status(`  ${pad('lease', 9)} ${shown.text}  ${seconds(Date.now() - provisionStarted)}`, shown.key);
  const active = await waitFor(
    out,
    'lease',
    timeoutMs,
    readLease,
    leaseStatus,
    (lease) => lease.state === 'Active',
    (lease) =>
      lease.state === 'Failed' || lease.state === 'Released'
        ? `the lease ended ${lease.state}${lease.failure === null ? '' : `: ${lease.failure.code}: ${lease.failure.message}`}`
        : null,
    provisionStarted,
  );
  out.line(`✓ lease Active on ${active.resourceId ?? 'an unnamed resource'}`);

  const inspected = await waitFor(
    out,
    'ready',
    Math.min(timeoutMs, 15_000),
    async () =>
      (
        await client.call<{
          lease: Lease;
          readyForDispatch: boolean;
          phase: string | null;
          conditions: { type: string; status: string; reason: string }[];
          observation: { phase: string | null; exact: boolean } | null;
          networkPolicy: { verified: boolean };
        }>('inspect', 'GET', `${env}/sandbox?networkPolicyGeneration=${POLICY_GENERATION}`, user)
      ).body,
    (view) => {
      // Which readiness conditions still hold it back, by type and reason.
      const waiting = view.conditions
        .filter((c) => c.status !== 'True')
        .map((c) => `${c.type}=${c.reason}`)
        .join(' ');
      return {
        text: `readyForDispatch ${String(view.readyForDispatch)} phase ${view.phase ?? '-'}${waiting === '' ? '' : ` waiting on ${waiting}`}`,
        key: `${String(view.readyForDispatch)}/${view.phase ?? '-'}/${waiting}`,
      };
    },
    (view) => view.readyForDispatch,
    (view) => (view.lease.state !== 'Active' ? `the lease left Active (${view.lease.state})` : null),
  );
  out.line(
    `✓ readyForDispatch true in phase ${inspected.phase ?? '-'}: the sandbox was observed ` +
      `${inspected.observation?.phase ?? '-'} and its AgentHost configured, network policy generation ` +
      `${POLICY_GENERATION} verified ${String(inspected.networkPolicy.verified)}`,
  );
  out.line(`  ${inspected.conditions.map((c) => `${c.type} ${c.status}`).join(', ')}`);

  const placement = (
    await client.call<{
      resource: { resourceId: string; endpoint: string | null };
      lease: { revision: number; expiresAt: string | null };
      providerPin: { providerId: string; adapterVersion: string };
    }>('placement', 'GET', `${env}/sandbox/v1/placement`, user)
  ).body;
  out.line(
    `✓ placement: ${placement.resource.resourceId} at ${placement.resource.endpoint ?? '(no endpoint)'}, ` +
      `lease revision ${placement.lease.revision}, expires ${placement.lease.expiresAt ?? 'never'}, ` +
      `pinned to ${placement.providerPin.providerId} ${placement.providerPin.adapterVersion}`,
  );

  if (options.buildTest === true) {
    await buildTestDemo({
      client,
      out,
      operator,
      user,
      tenant,
      project,
      runId: run,
      env,
      timeoutMs,
      profile: config.buildTestProfile,
    });
    out.line('');
  }

  // A resume advances the lifecycle generation; the release names the current one.
  let lifecycleGeneration = registered.body.lifecycleGeneration;
  if (options.suspendResume === true) {
    ({ lifecycleGeneration } = await suspendResumeDemo({
      client,
      out,
      operator,
      user,
      tenant,
      project,
      runId: run,
      environmentId: registered.body.environmentId,
      env,
      volumeKey: 'demo-workspace',
      timeoutMs,
    }));
    out.line('');
  }

  const releaseStarted = Date.now();
  const released = await client.call<Lifecycle>('release', 'POST', `${env}/release`, user, {
    expectedLifecycleGeneration: lifecycleGeneration,
    idempotencyKey: 'demo-release',
  });
  out.line(`✓ Environment release accepted (${released.body.state})`);
  const readBoth = async () => ({
    lifecycle: (await client.call<Lifecycle>('read lifecycle', 'GET', `${env}/lifecycle`, user)).body,
    lease: await readLease(),
  });
  const end = await waitFor(
    out,
    'release',
    timeoutMs,
    readBoth,
    ({ lifecycle, lease }) => ({
      text: `Environment ${pad(lifecycle.state, 10)} lease ${pad(lease.state, 22)}`,
      key: `${lifecycle.state}/${lease.state}`,
    }),
    ({ lifecycle, lease }) => lifecycle.state === 'Released' && lease.state === 'Released',
    () => null,
    releaseStarted,
  );
  out.line(`✓ Environment Released (revision ${end.lifecycle.revision}), lease Released, placement retired`);

  const attempts = await client.call<{ attempts: Attempt[] }>(
    'provider attempts',
    'GET',
    `${env}/sandbox/v1/operations/${operationId}/provider-attempts`,
    user,
  );
  out.line('');
  out.line(`Provider attempts of ${operationId} (each written before its call):`);
  for (const text of timeline(attempts.body.attempts)) out.line(text);
  const summary = attempts.body.attempts.map((a) => `${a.kind} ${a.state}`).join(', ');
  out.line(`${attempts.body.attempts.length} attempts: ${summary}`);

  const journal = await client.call<{ entries: JournalEntry[] }>('journal', 'GET', `${env}/journal`, user);
  out.line('');
  out.line(`Journal of ${registered.body.environmentId} (one row per committed transition):`);
  for (const text of journalTimeline(journal.body.entries)) out.line(text);
}

interface JournalEntry {
  revision: number;
  event: Record<string, unknown>;
  to: Record<string, string>;
  actor: string;
  recordedAt: string;
}

function journalTimeline(entries: JournalEntry[]): string[] {
  const first = entries[0] === undefined ? 0 : Date.parse(entries[0].recordedAt);
  return entries.map((e) => {
    const at = `+${Date.parse(e.recordedAt) - first} ms`.padStart(9);
    const what = [e.event['type'], e.event['kind'], e.event['attemptId']]
      .filter((v): v is string => typeof v === 'string')
      .join(' ');
    const to = Object.entries(e.to)
      .map(([region, state]) => `${region}=${state}`)
      .join(' ');
    return `${at}  r${e.revision}  ${String(what).padEnd(48)} → ${to}  (${e.actor})`;
  });
}
