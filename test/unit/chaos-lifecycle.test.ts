// The chaos lifecycle client (chaos/lifecycle.ts) against a scripted API: a lease parked because its
// provisioner's authority lapsed is never made ready by reconciliation, so the client stops waiting
// at once, releases the Environment and records the outcome `parked, then released` (no finding);
// a lease that is merely not ready by the deadline is still `lifecycle-stuck`.
import { describe, expect, it } from 'vitest';
import type { Answer, ChaosClient } from '../../chaos/client.ts';
import { LifecycleFailure, parkedLapse, runLifecycle, type LifecyclePlan } from '../../chaos/lifecycle.ts';
import { newRecord } from '../../chaos/driver.ts';
import { Recorder } from '../../chaos/recorder.ts';
import { authorityLapseCodes } from '../../machines/environment-context.ts';

const ENVIRONMENTS = '/v1/environments';
const ENV = 'env_test';

const quietPlan: LifecyclePlan = {
  abandon: false,
  duplicateRegister: false,
  duplicateProvision: false,
  duplicateRelease: false,
  staleReleaseGeneration: false,
  staleProvisionWhileCurrent: false,
  staleAbandonFence: false,
  staleAbandonAfterRelease: false,
  provisionAfterReleased: false,
};

/** Answers each request by its method and path; `inspect` is the lease every inspection shows. */
function scriptedClient(inspect: Record<string, unknown>) {
  const calls: string[] = [];
  const answer = (status: number, body: Record<string, unknown>): Answer => ({
    status,
    body,
    api: 'api-0',
    receivedAtMs: Date.now(),
  });
  const client = {
    call: (method: string, path: string): Promise<Answer> => {
      calls.push(`${method} ${path}`);
      const base = `${ENVIRONMENTS}/${ENV}`;
      if (method === 'POST' && path === ENVIRONMENTS)
        return Promise.resolve(answer(201, { environmentId: ENV }));
      if (method === 'POST' && path === `${base}/workspace-volumes`) {
        return Promise.resolve(answer(201, { volumeId: 'vol_1', resourceGeneration: 1, dataGeneration: 1 }));
      }
      if (method === 'POST' && path === `${base}/sandbox/provision`) {
        return Promise.resolve(answer(202, { operationId: 'op_1', state: 'Provisioning' }));
      }
      if (method === 'GET' && path.startsWith(`${base}/sandbox`)) {
        return Promise.resolve(answer(200, { lease: inspect, readyForDispatch: false }));
      }
      if (method === 'POST' && path === `${base}/release`) {
        return Promise.resolve(answer(200, { environmentId: ENV, state: 'Released' }));
      }
      return Promise.resolve(answer(404, { type: 'urn:sandlot:problem:not-scripted' }));
    },
  };
  return { client: client as unknown as ChaosClient, calls };
}

function contextFor(client: ChaosClient, deadlineMs: number) {
  const printed: string[] = [];
  const recorder = new Recorder((line) => printed.push(line));
  return {
    ctx: { client, recorder, environments: ENVIRONMENTS, deadlineMs, waitFor: 'ready' as const },
    recorder,
    printed,
  };
}

const parkedLease = (code: string) => ({
  state: 'ReconciliationRequired',
  current: true,
  failure: { code, message: 'the authority check did not answer' },
});

describe('parkedLapse', () => {
  it.each(authorityLapseCodes)('recognises a ReconciliationRequired lease parked for %s', (code) => {
    expect(parkedLapse(parkedLease(code))).toBe(code);
  });

  it('does not take other leases for parked', () => {
    expect(parkedLapse(undefined)).toBeNull();
    expect(parkedLapse({ state: 'ReconciliationRequired', current: true, failure: null })).toBeNull();
    expect(parkedLapse(parkedLease('provider-timeout'))).toBeNull();
    expect(
      parkedLapse({ ...parkedLease('authority-unavailable'), state: 'Failed', current: false }),
    ).toBeNull();
  });
});

describe('runLifecycle while waiting for readiness', () => {
  it('releases a parked lease at once and records it as parked, not as a finding', async () => {
    const { client, calls } = scriptedClient(parkedLease('authority-unavailable'));
    const { ctx, recorder } = contextFor(client, 90_000);
    const record = newRecord(0, quietPlan);
    const started = Date.now();

    await runLifecycle(ctx, record);

    expect(record.outcome).toBe('parked, then released');
    // The whole-run check needs the moment the client was told Released.
    expect(record.releasedAnswer).toEqual({
      atMs: expect.any(Number) as number,
      what: 'POST …/release 200 (api-0)',
    });
    expect(recorder.findings).toEqual([]);
    expect(recorder.counterObject()).toEqual({
      'lifecycles parked (lease ReconciliationRequired, authority-unavailable), then released': 1,
    });
    // One inspection, then the release: no waiting for a readiness that never comes.
    expect(calls.filter((c) => c.startsWith('GET '))).toHaveLength(1);
    expect(calls.at(-1)).toBe(`POST ${ENVIRONMENTS}/${ENV}/release`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('still reports a lease that is not parked and never ready as lifecycle-stuck', async () => {
    const { client, calls } = scriptedClient({
      state: 'ReconciliationRequired',
      current: true,
      failure: null,
    });
    const { ctx, recorder } = contextFor(client, -1);
    const record = newRecord(0, quietPlan);

    await expect(runLifecycle(ctx, record)).rejects.toBeInstanceOf(LifecycleFailure);

    expect(recorder.findings.map((f) => [f.kind, f.environmentId])).toEqual([['lifecycle-stuck', ENV]]);
    expect(calls.some((c) => c.endsWith('/release'))).toBe(false);
  });
});
