import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal } from '../../store/journal.ts';
import { readVolume } from '../../store/workspaces.ts';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';

describe.each(backends)('sandbox lease lifecycle through workers (%s)', (backend) => {
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    handle = await openBackend(backend);
    h = await buildHarness(handle.db, {
      workers: {},
      provider: { phaseDelaysMs: { imageReady: 10, started: 30 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  it('provisions to Active, reports readiness, releases to Released and leaves no resource', async () => {
    const s = await setupScenario(h, { run: 'run-flow' });
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    const lease = await json(provisioned);
    expect(lease).toMatchObject({
      state: 'Provisioning',
      resourceGeneration: 1,
      providerFence: 1,
      current: true,
    });
    expect(JSON.stringify(lease)).not.toContain('namespace');

    const replay = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(replay.status).toBe(202);
    expect(await json(replay)).toMatchObject({ operationId: lease['operationId'], resourceGeneration: 1 });
    const reused = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: { ...provisionBody(s), workspace: { ...provisionBody(s).workspace, readOnly: true } },
    });
    expect(reused.status).toBe(409);
    expect(await json(reused)).toMatchObject({ type: 'urn:sandlot:problem:idempotency-key-reused' });

    await waitForLease(h, s, (l) => l['state'] === 'Active');
    expect((await readVolume(h.db, s.volume.volumeId))?.state).toBe('Attached');
    await new Promise((r) => setTimeout(r, 60));
    const inspected = await json<{
      readyForDispatch: boolean;
      observation: { phase: string; exact: boolean };
    }>(await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }));
    expect(inspected.observation).toMatchObject({ exact: true, phase: 'started' });
    expect(inspected.readyForDispatch).toBe(true);
    const unverified = await json<{ readyForDispatch: boolean }>(
      await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
    );
    expect(unverified.readyForDispatch).toBe(false);

    const release = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
    });
    expect(release.status).toBe(202);
    await waitForLifecycle(h, s, 'Released');
    const final = await waitForLease(h, s, (l) => l['state'] === 'Released');
    expect(final['current']).toBe(false);
    expect(await h.provider.countResources({})).toBe(0);
    expect((await readVolume(h.db, s.volume.volumeId))?.state).toBe('Available');

    const attempts = await json<{ attempts: { kind: string; state: string }[] }>(
      await h.request(
        'GET',
        `${s.base}/sandbox/v1/operations/${String(lease['operationId'])}/provider-attempts`,
        {
          token: s.token,
        },
      ),
    );
    expect(attempts.attempts.filter((a) => a.kind !== 'describe').map((a) => [a.kind, a.state])).toEqual([
      ['provision', 'Succeeded'],
      ['release', 'Succeeded'],
    ]);
    const journal = await readJournal(h.db, s.environmentId);
    console.log('commits for register → provision → Active → release → Released:', journal.length);
  });
});
