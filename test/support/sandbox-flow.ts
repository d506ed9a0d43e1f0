// Helpers for sandbox tests: set up a project with a network policy, register an Environment,
// create its Workspace, provision, and wait for states through the real HTTP API.
import type { Harness } from './harness.ts';
import { seedProject } from './harness.ts';

export interface Scenario {
  token: string;
  base: string;
  environmentId: string;
  volume: { volumeId: string; resourceGeneration: number; dataGeneration: number };
}

export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

export async function setupScenario(
  h: Harness,
  { tenant = 'acme', project = 'checkout', run = 'run-1', key = 'env-1' } = {},
): Promise<Scenario> {
  await seedProject(h, { tenant, project, run, subject: 'alice' });
  const operator = await h.token(tenant, 'ops', { operator: true });
  const policy = await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/network-policies/1`, {
    token: operator,
    body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
  });
  if (policy.status !== 201 && policy.status !== 200)
    throw new Error(`policy: ${policy.status} ${await policy.text()}`);
  const token = await h.token(tenant, 'alice');
  const envs = `/api/projects/${project}/runs/${run}/environments`;
  const registered = await h.request('POST', envs, { token, body: { idempotencyKey: key } });
  const { environmentId } = await json<{ environmentId: string }>(registered);
  const base = `${envs}/${environmentId}`;
  const volume = await json<Scenario['volume']>(
    await h.request('POST', `${base}/workspace-volumes`, { token, body: { idempotencyKey: 'ws-1' } }),
  );
  return { token, base, environmentId, volume };
}

export function provisionBody(s: Pick<Scenario, 'volume'>, key = 'prov-1') {
  return {
    idempotencyKey: key,
    workspace: {
      volumeId: s.volume.volumeId,
      resourceGeneration: s.volume.resourceGeneration,
      dataGeneration: s.volume.dataGeneration,
      mountPath: '/workspace',
      readOnly: false,
    },
    networkPolicyGeneration: 1,
  };
}

/**
 * Seeds acme/checkout/run-1 and provisions `count` Environments (`env-0` …) over HTTP, each with its
 * own Workspace; returns once every provision was accepted (202), not when the leases are Active.
 */
export async function provisionMany(h: Harness, count: number): Promise<void> {
  await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'alice' });
  const operator = await h.token('acme', 'ops', { operator: true });
  const policy = await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/1', {
    token: operator,
    body: { policy: { egress: [] } },
  });
  if (policy.status >= 300) throw new Error(`policy: ${policy.status} ${await policy.text()}`);
  const token = await h.token('acme', 'alice');
  const envs = '/api/projects/checkout/runs/run-1/environments';
  for (let i = 0; i < count; i++) {
    const registered = await h.request('POST', envs, { token, body: { idempotencyKey: `env-${i}` } });
    const { environmentId } = await json<{ environmentId: string }>(registered);
    const base = `${envs}/${environmentId}`;
    const volume = await json<Scenario['volume']>(
      await h.request('POST', `${base}/workspace-volumes`, { token, body: { idempotencyKey: 'ws-1' } }),
    );
    const s: Scenario = { token, base, environmentId, volume };
    const res = await h.request('POST', `${base}/sandbox/provision`, { token, body: provisionBody(s) });
    if (res.status !== 202) throw new Error(`provision ${i}: ${res.status} ${await res.text()}`);
  }
}

/** Polls the sandbox until `predicate` holds on the lease, or fails after `timeoutMs`. */
export async function waitForLease(
  h: Harness,
  s: Scenario,
  predicate: (lease: Record<string, unknown>) => boolean,
  timeoutMs = 15_000,
): Promise<Record<string, unknown>> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    const res = await h.request('GET', `${s.base}/sandbox`, { token: s.token });
    const body = await json<{ lease: Record<string, unknown> }>(res);
    last = body;
    if (res.status === 200 && predicate(body.lease)) return body.lease;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`lease did not reach the expected state in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

export async function waitForLifecycle(
  h: Harness,
  s: Scenario,
  state: string,
  timeoutMs = 15_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    const body = await json<{ state: string }>(
      await h.request('GET', `${s.base}/lifecycle`, { token: s.token }),
    );
    last = body;
    if (body.state === state) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`lifecycle did not reach ${state}; last: ${JSON.stringify(last)}`);
}
