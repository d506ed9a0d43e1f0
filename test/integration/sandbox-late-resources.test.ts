// Late resources: a valid provider resource of ours that no current lease owns gets a cleanup
// record (the terminal lease is never changed for it), blocks Environment release, and leaves
// through its own claim and release attempt. Claims are exclusive and expire; a receipt under a
// claim that is no longer current is recorded on its attempt and changes nothing else.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { beginAttempt, completeAttempt } from '../../actors/attempts.ts';
import { claimTtlMs } from '../../actors/cleanups.ts';
import { runAudit } from '../../actors/audit.ts';
import { reportWorkspaceConflicts } from '../../actors/workspace/conflicts.ts';
import { createLogger } from '../../lib/logger.ts';
import { createMetrics } from '../../lib/metrics.ts';
import type { OwnerBinding, SandboxProvider } from '../../providers/provider.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import { readAttemptsOfOperation } from '../../store/attempts.ts';
import { claimableCleanups, insertCleanup, readCleanupsOf } from '../../store/cleanups.ts';
import { sweepsDue, sweepsDueStatement } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import { runAttempt, summaryOf } from '../../workers/effect-processor.ts';
import { runnerDeps, type WorkerHost } from '../../workers/host.ts';
import { reconcileOnce } from '../../workers/reconciler.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';
import {
  countingProvider,
  environmentRows,
  eventually,
  mutableRows,
  problemOf,
  sleep,
  startWorkersWith,
} from '../support/sandbox-scenarios.ts';

const CALL_TIMEOUT_MS = 2_000;
const logger = createLogger({ level: 'silent' });

interface CleanupBody {
  cleanupId: string;
  state: string;
  foundBy: string;
  resourceId: string;
  source: {
    operationId: string;
    attemptId: string | null;
    resourceGeneration: number;
    providerFence: number;
  };
  claim: { attemptId: string | null } | null;
  attempt: { attemptId: string; state: string } | null;
  receipt: Record<string, unknown> | null;
  workspaceConflict: { volumeId: string; heldByLease: number | null; state: string } | null;
}

describe('late resources', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;
  let workers: WorkerHost | undefined;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    // Workers run only while a test means them to: a test drives claims and attempts itself.
    h = await buildHarness(pg.open(), { workers: false });
    s = await setupScenario(h);
  });
  afterEach(async () => {
    await workers?.close();
    workers = undefined;
    await h.close();
    await pg.drop();
  });

  const deps = () => ({
    ...runnerDeps({ db: h.db, runtime: h.runtime, provider: h.provider, logger }, CALL_TIMEOUT_MS),
    logger,
  });

  const cleanups = async () => {
    const res = await h.request('GET', `${s.base}/sandbox/v1/late-resource-cleanups`, { token: s.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return (await json<{ cleanups: CleanupBody[] }>(res)).cleanups;
  };

  /** Provision to Active, then abandon to Released: the lease is terminal. Returns its provision attempt. */
  async function terminalLease() {
    const setup = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    try {
      return await provisionAndAbandon();
    } finally {
      await setup.close();
    }
  }

  async function provisionAndAbandon() {
    const provisioned = await json<{
      operationId: string;
      resourceGeneration: number;
      providerFence: number;
    }>(await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }));
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const attempts = await readAttemptsOfOperation(h.db, provisioned.operationId);
    const provision = attempts.find((a) => a.kind === 'provision');
    if (provision === undefined) throw new Error('no provision attempt');
    return { operationId: provisioned.operationId, provision };
  }

  /** A terminal lease whose provision's worker answers late with a resource the lease does not hold. */
  async function recordedLateResource() {
    const { operationId, provision } = await terminalLease();
    const late = await answerLate(operationId, provision.attemptId);
    return { operationId, provision, late };
  }

  /** The lease's create lands late, and its provision's worker answers with it. */
  async function answerLate(operationId: string, attemptId: string) {
    const late = await landLateCreate(operationId, await ownerOfLease(operationId));
    await completeAttempt({ ...deps(), actor: 'worker:late' }, attemptId, {
      state: 'Succeeded',
      resource: summaryOf(late),
    });
    return late;
  }

  /** A resource of the lease's owner and fence that lands after the lease is terminal. */
  async function landLateCreate(operationId: string, attemptOwner: OwnerBinding) {
    const late = await h.provider.provision(
      {
        owner: { ...attemptOwner, operationId: `${operationId}.late` },
        workspace: provisionBody(s).workspace,
        networkPolicyGeneration: 1,
        options: h.provider.optionsSnapshot(),
      },
      { signal: AbortSignal.timeout(5_000), deadline: new Date(Date.now() + 5_000) },
    );
    return late;
  }

  async function ownerOfLease(operationId: string): Promise<OwnerBinding> {
    const { rows } = await h.db.query<{ ownerHash: string }>(
      `SELECT request->>'ownerHash' AS "ownerHash" FROM provider_attempts WHERE operation_id = $1 LIMIT 1`,
      [operationId],
    );
    return {
      tenantId: 'acme',
      projectId: 'checkout',
      runId: 'run-1',
      environmentId: s.environmentId,
      ownerHash: rows[0]?.ownerHash ?? '',
      lifecycleGeneration: 1,
      resourceGeneration: 1,
      providerFence: 1,
      operationId,
    };
  }

  it('records a result that lands after its lease is terminal, blocks Environment release, then releases it', async () => {
    const { operationId, provision } = await terminalLease();
    const late = await landLateCreate(operationId, await ownerOfLease(operationId));
    const leaseBefore = (await environmentRows(h.db, s.environmentId)).leases;

    // The provision's worker answers late with a resource the terminal lease does not hold.
    await completeAttempt({ ...deps(), actor: 'worker:late' }, provision.attemptId, {
      state: 'Succeeded',
      resource: summaryOf(late),
    });
    const [record] = await cleanups();
    expect(record).toMatchObject({
      state: 'Pending',
      foundBy: 'late-result',
      resourceId: late.resourceId,
      // The release's identity is the binding stamped on the resource (its own operation).
      source: {
        operationId: `${operationId}.late`,
        attemptId: provision.attemptId,
        resourceGeneration: 1,
        providerFence: 1,
      },
      claim: null,
      receipt: null,
    });
    // The result is kept on its attempt; the terminal lease row is unchanged.
    const attempt = (await readAttemptsOfOperation(h.db, operationId)).find(
      (a) => a.attemptId === provision.attemptId,
    );
    expect(attempt).toMatchObject({ state: 'Succeeded', lateResult: { state: 'Succeeded' } });
    expect((await environmentRows(h.db, s.environmentId)).leases).toEqual(leaseBefore);
    // The Workspace stays attached to the source lease while its late resource lives.
    expect(await readVolume(h.db, s.volume.volumeId)).toMatchObject({ state: 'Attached', attachedLease: 1 });

    // Environment release is refused while the cleanup is pending, and changes nothing.
    const rowsBefore = mutableRows(await environmentRows(h.db, s.environmentId));
    const blocked = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-env' },
    });
    expect(blocked.status).toBe(409);
    const problem = await problemOf(blocked);
    expect(problem).toMatchObject({ pendingCleanups: [record?.cleanupId] });
    expect(mutableRows(await environmentRows(h.db, s.environmentId))).toEqual(rowsBefore);

    // The reconciler claims it; a worker releases it under the saved source binding.
    const counting = countingProvider(h.provider);
    workers = await startWorkersWith(h, counting, { callTimeoutMs: CALL_TIMEOUT_MS });
    const released = await eventually('the cleanup to be released', async () => {
      const [c] = await cleanups();
      return c?.state === 'Released' ? c : undefined;
    });
    expect(released).toMatchObject({
      attempt: { state: 'Succeeded' },
      receipt: { outcome: 'KnownOwnedAbsent', resourceId: late.resourceId },
    });
    expect(counting.calls.release).toBe(1);
    expect(await h.provider.countResources({ operationId: `${operationId}.late` })).toBe(0);
    expect(await readVolume(h.db, s.volume.volumeId)).toMatchObject({ state: 'Available' });

    const done = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-env' },
    });
    expect(done.status).toBe(200);
    expect(await json(done)).toMatchObject({ state: 'Released' });
  });

  it('a late resource whose Workspace a newer lease holds is a surfaced conflict, claimed first and released', async () => {
    const metrics = createMetrics({ defaults: false });
    const lines: string[] = [];
    const warnings = createLogger({ level: 'warn', destination: { write: (line) => lines.push(line) } });
    h.runtime.onCommitted(reportWorkspaceConflicts(warnings, () => metrics.workspaceConflicts.inc()));
    const conflictsCounted = async () =>
      (await metrics.registry.getSingleMetric('sandlot_workspace_conflicts_total')?.get())?.values[0]?.value;
    const workspaceAttached = async () => {
      const res = await h.request('GET', `${s.base}/sandbox`, { token: s.token });
      const body = await json<{
        conditions: { type: string; status: string; reason: string; message: string }[];
      }>(res);
      return body.conditions.find((c) => c.type === 'WorkspaceAttached');
    };

    // Lease 1 ends; lease 2 is Active on the same volume. Then lease 1's create answers late (forced:
    // a provider whose in-flight proof was wrong), so its resource may mount lease 2's Workspace.
    const { operationId, provision } = await terminalLease();
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'prov-2'),
    });
    await waitForLease(h, s, (l) => l['state'] === 'Active' && l['resourceGeneration'] === 2);
    const late = await answerLate(operationId, provision.attemptId);

    // Kept on the row and shown by the read; the volume stays with lease 2; logged and counted.
    const [record] = await cleanups();
    expect(record).toMatchObject({
      state: 'Pending',
      resourceId: late.resourceId,
      workspaceConflict: { volumeId: s.volume.volumeId, heldByLease: 2, state: 'Attached' },
    });
    expect(await readVolume(h.db, s.volume.volumeId)).toMatchObject({ state: 'Attached', attachedLease: 2 });
    expect(await conflictsCounted()).toBe(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      level: 40,
      cleanupId: record?.cleanupId,
      volumeId: s.volume.volumeId,
      heldByLease: 2,
    });

    // The inspection of lease 2 names the late resource; the audit reports it.
    expect(await workspaceAttached()).toMatchObject({ status: 'False', reason: 'WorkspaceConflict' });
    expect((await workspaceAttached())?.message).toContain(late.resourceId);
    const report = await runAudit({ db: h.db, provider: h.provider, callLog: true });
    expect(report.findings.workspaceConflicts).toEqual([
      expect.objectContaining({ cleanupId: record?.cleanupId, sourceLease: 1, heldByLease: 2 }),
    ]);

    // Claimed before an older item without a conflict (inserted and rolled back to keep the Environment as is).
    const first = await h.db
      .transaction(async (tx) => {
        const [row] = await readCleanupsOf(tx, s.environmentId);
        if (row === undefined) throw new Error('no cleanup row');
        await insertCleanup(tx, {
          cleanupId: 'older-without-conflict',
          environmentId: s.environmentId,
          foundBy: 'owner-listing',
          sourceAttemptId: null,
          source: {
            operationId: 'op-older',
            lifecycleGeneration: row.sourceLifecycleGeneration,
            resourceGeneration: row.sourceResourceGeneration,
            providerFence: row.sourceProviderFence,
            ownerHash: row.ownerHash,
            providerOptions: row.providerOptions,
            workspace: provisionBody(s).workspace,
          },
          resource: { resourceId: 'res-older', operationId: 'op-older', phase: 'Running', placement: {} },
          revision: 1,
        });
        await tx.query(
          `UPDATE late_resource_cleanups SET created_at = now() - interval '1 hour' WHERE cleanup_id = $1`,
          ['older-without-conflict'],
        );
        const claimable = await claimableCleanups(tx, new Date(), 10);
        throw Object.assign(new Error('roll back'), { claimable });
      })
      .catch((e: { claimable: { cleanupId: string }[] }) => e.claimable.map((c) => c.cleanupId));
    expect(first).toEqual([record?.cleanupId, 'older-without-conflict']);

    // The reconciler releases it; then no conflict shows but on the released row's history.
    await workers.close();
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
    });
    await eventually('the conflicted cleanup to be released', async () => {
      const [c] = await cleanups();
      return c?.state === 'Released' ? c : undefined;
    });
    expect(await h.provider.countResources({ operationId: `${operationId}.late` })).toBe(0);
    expect(await readVolume(h.db, s.volume.volumeId)).toMatchObject({ state: 'Attached', attachedLease: 2 });
    expect(await workspaceAttached()).toMatchObject({ status: 'True' });
    expect(
      (await runAudit({ db: h.db, provider: h.provider, callLog: true })).findings.workspaceConflicts,
    ).toEqual([]);
    expect(await conflictsCounted()).toBe(1);
  });

  it('a duplicate of a recorded late result records nothing more', async () => {
    const { operationId, provision } = await terminalLease();
    const late = await landLateCreate(operationId, await ownerOfLease(operationId));
    const outcome = { state: 'Succeeded' as const, resource: summaryOf(late) };
    await completeAttempt({ ...deps(), actor: 'worker:late' }, provision.attemptId, outcome);
    await completeAttempt({ ...deps(), actor: 'worker:late' }, provision.attemptId, outcome);
    expect(await cleanups()).toHaveLength(1);
  });

  it('two reconcilers racing on one late resource make exactly one claim and one provider release', async () => {
    const { operationId } = await recordedLateResource();
    const [a, b] = await Promise.all([
      reconcileOnce({ ...deps(), actor: 'reconciler:a' }),
      reconcileOnce({ ...deps(), actor: 'reconciler:b' }),
    ]);
    expect(a.cleanupsClaimed + b.cleanupsClaimed).toBe(1);
    const [claimed] = await readCleanupsOf(h.db, s.environmentId);
    expect(claimed?.state).toBe('Claimed');
    const cleanupAttempts = (await readAttemptsOfOperation(h.db, `${operationId}.late`)).filter(
      (x) => x.kind === 'cleanup',
    );
    expect(cleanupAttempts.map((x) => x.attemptId)).toEqual([claimed?.releaseAttemptId]);

    const counting = countingProvider(h.provider);
    const runner = { ...deps(), provider: counting, actor: 'worker:test' };
    // Both workers get the one attempt (a queue may deliver it twice): one call only.
    await Promise.all([
      runAttempt(runner, claimed?.releaseAttemptId ?? '', AbortSignal.timeout(5_000)),
      runAttempt(runner, claimed?.releaseAttemptId ?? '', AbortSignal.timeout(5_000)),
    ]);
    expect(counting.calls.release).toBe(1);
    expect((await readCleanupsOf(h.db, s.environmentId))[0]?.state).toBe('Released');
    expect(await h.provider.countResources({ operationId: `${operationId}.late` })).toBe(0);
  });

  it('two reconcilers finding the same sweep due open it once, and neither fails', async () => {
    // Found by the chaos run: the loser's sweep collided with the winner's attempt and was logged
    // as an error ("could not sweep a terminal lease"), about one sweep in ten with 3 workers.
    const { operationId } = await terminalLease();
    const failures: string[] = [];
    const watched = createLogger({
      level: 'error',
      destination: { write: (line: string) => void failures.push(line) },
    });
    // Between the first sweep's due time and the second's: only sweep 1 is due, whichever
    // reconciler reads after the other committed.
    const { rows } = await h.db.query<{ terminalAt: Date }>(
      `SELECT terminal_at AS "terminalAt" FROM sandbox_leases WHERE operation_id = $1`,
      [operationId],
    );
    const later = new Date((rows[0]?.terminalAt.getTime() ?? Date.now()) + 1_500);
    const sweepOnce = (actor: string) =>
      reconcileOnce({ ...deps(), logger: watched, actor, now: () => later, lateSweepMs: 1_000 });
    const [a, b] = await Promise.all([sweepOnce('reconciler:a'), sweepOnce('reconciler:b')]);
    expect(failures).toEqual([]);
    expect(a.swept + b.swept).toBe(1);
    const sweeps = (await readAttemptsOfOperation(h.db, operationId)).filter((x) => x.kind === 'sweep');
    expect(sweeps.map((x) => x.attemptId)).toEqual([`${operationId}.sweep.1`]);
  });

  it("refuses the receipt of an expired claim once a newer claim holds the item; the newer one's is saved", async () => {
    const { operationId, late } = await recordedLateResource();
    const t0 = new Date();
    await reconcileOnce({ ...deps(), actor: 'reconciler:a', now: () => t0 });
    const first = (await readCleanupsOf(h.db, s.environmentId))[0];
    const slow = first?.releaseAttemptId ?? '';
    // The first claim's worker dispatches and then goes quiet past the claim's expiry.
    const begun = await beginAttempt({ ...deps(), actor: 'worker:slow' }, slow, 60_000);
    expect(begun.dispatch).toBe(true);

    const later = new Date(t0.getTime() + claimTtlMs(CALL_TIMEOUT_MS) + 1);
    const second = await reconcileOnce({ ...deps(), actor: 'reconciler:b', now: () => later });
    expect(second.cleanupsClaimed).toBe(1);
    const reclaimed = (await readCleanupsOf(h.db, s.environmentId))[0];
    expect(reclaimed?.releaseAttemptId).not.toBe(slow);

    // The slow worker's receipt arrives now: recorded on its attempt, refused for the item.
    await completeAttempt({ ...deps(), actor: 'worker:slow' }, slow, {
      state: 'Succeeded',
      receipt: { outcome: 'KnownOwnedAbsent', resourceId: late.resourceId, idempotencyKey: 'slow' },
    });
    const afterSlow = (await readCleanupsOf(h.db, s.environmentId))[0];
    expect(afterSlow).toMatchObject({
      state: 'Claimed',
      receipt: null,
      releaseAttemptId: reclaimed?.releaseAttemptId,
    });
    const slowRow = (await readAttemptsOfOperation(h.db, `${operationId}.late`)).find(
      (x) => x.attemptId === slow,
    );
    expect(slowRow?.state).toBe('Succeeded');

    // The current claim's release goes through and its receipt is the one saved.
    await runAttempt(
      { ...deps(), actor: 'worker:b' },
      reclaimed?.releaseAttemptId ?? '',
      AbortSignal.timeout(5_000),
    );
    expect((await readCleanupsOf(h.db, s.environmentId))[0]).toMatchObject({
      state: 'Released',
      receipt: { outcome: 'KnownOwnedAbsent', resourceId: late.resourceId },
    });
  });

  it('a failed cleanup release stays visible and leaves the item available for the next claim', async () => {
    await recordedLateResource();
    await reconcileOnce({ ...deps(), actor: 'reconciler' });
    const claimed = (await readCleanupsOf(h.db, s.environmentId))[0];
    h.provider.injectFault('release', 'server-error');
    await runAttempt(
      { ...deps(), actor: 'worker' },
      claimed?.releaseAttemptId ?? '',
      AbortSignal.timeout(5_000),
    );
    const [failed] = await cleanups();
    expect(failed).toMatchObject({ state: 'Pending', attempt: { state: 'Unknown' } });
    expect((await readCleanupsOf(h.db, s.environmentId))[0]?.lastError).toMatchObject({
      code: 'server-error',
    });

    await reconcileOnce({ ...deps(), actor: 'reconciler' });
    const retry = (await readCleanupsOf(h.db, s.environmentId))[0];
    expect(retry?.releaseAttemptId).not.toBe(claimed?.releaseAttemptId);
    await runAttempt(
      { ...deps(), actor: 'worker' },
      retry?.releaseAttemptId ?? '',
      AbortSignal.timeout(5_000),
    );
    expect((await cleanups())[0]).toMatchObject({ state: 'Released' });
  });

  /** Abandons the current (first) lease; the release that follows lists, finds nothing yet. */
  const abandonFirst = () =>
    h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
    });
  const releaseEnvironment = () =>
    h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-env' },
    });
  const unsettled = (l: Record<string, unknown>) =>
    l['state'] === 'ReconciliationRequired' &&
    (l['failure'] as { code?: string } | null)?.code === 'release-unsettled';

  it("releases a stray the provider made under another operation of the lease's fence before the Environment is Released", async () => {
    // The provider's duplicate: same owner hash and fence, another operation (`<op>/stray`).
    h.provider.injectFault('provision', 'duplicate-resource');
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const stray = `${operationId}/stray`;
    expect(await h.provider.countResources({ operationId: stray })).toBe(1);

    expect((await releaseEnvironment()).status).toBe(202);
    await waitForLifecycle(h, s, 'Released');
    // The lease's release listed its whole owner fence and released the stray under its own
    // binding: nothing of the Environment is live once it is Released, and no cleanup was needed.
    expect(await h.provider.countResources({ operationId })).toBe(0);
    expect(await h.provider.countResources({ operationId: stray })).toBe(0);
    expect(await cleanups()).toEqual([]);
    const [release] = (await readAttemptsOfOperation(h.db, operationId)).filter((a) => a.kind === 'release');
    expect((release?.receipt as { resourceIds: string[] }).resourceIds).toHaveLength(2);
    // The stray's release call was made under the lease's release attempt: the audit's call log
    // check accounts for it.
    const report = await runAudit({ db: h.db, provider: h.provider, callLog: true });
    expect(report.findings.callsWithoutAttempt).toEqual([]);
    expect(report.findings.orphans).toEqual([]);
  });

  it('an empty release lookup leaves a timed-out create unresolved: release is refused until the create lands and is found', async () => {
    // Used to answer Released (and the Environment release 200) before any sweep (E14): the
    // release's exact lookup found nothing yet, and that settled the Unknown create.
    const LAND_MS = 3_000;
    h.provider.injectFault('provision', 'late-resource', LAND_MS);
    const setup = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
    await abandonFirst();
    await waitForLease(h, s, unsettled);
    const provision = (await readAttemptsOfOperation(h.db, operationId)).find((a) => a.kind === 'provision');
    expect(provision?.state).toBe('Unknown');

    const blocked = await releaseEnvironment();
    expect(blocked.status).toBe(409);
    expect(blocked.headers.get('content-type')).toContain('application/problem+json');
    expect(blocked.headers.get('retry-after')).toBe('5');
    const problem = await problemOf(blocked);
    expect(problem['unresolvedAttempts']).toContain(provision?.attemptId);
    await setup.close();

    // The create lands; reconciliation's exact lookup finds it, and the release that follows
    // releases it: that is the evidence that settles the Unknown create.
    await eventually('the late create to land', async () =>
      (await h.provider.countResources({ operationId })) === 1 ? true : undefined,
    );
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
    });
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    expect(await h.provider.countResources({ operationId })).toBe(0);
    expect(
      (await readAttemptsOfOperation(h.db, operationId)).find((a) => a.kind === 'provision'),
    ).toMatchObject({
      state: 'Superseded',
      resolution: expect.stringContaining('by exact listOwned') as unknown,
    });
    expect(await cleanups()).toEqual([]);
    expect((await releaseEnvironment()).status).toBe(200);
  });

  it("an Unknown create that never lands is settled by the provider's in-flight proof, not by the empty lookup", async () => {
    // A 5xx before anything was applied: the outcome is Unknown, and nothing will ever land.
    h.provider.injectFault('provision', 'server-error');
    const setup = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
    await abandonFirst();
    await waitForLease(h, s, unsettled);
    expect((await releaseEnvironment()).status).toBe(409);
    await setup.close();

    // Past the call's deadline plus the simulated provider's in-flight window, a release's exact
    // lookup that finds nothing is evidence: the lease is Released.
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
    });
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const provision = (await readAttemptsOfOperation(h.db, operationId)).find((a) => a.kind === 'provision');
    expect(provision).toMatchObject({
      state: 'Superseded',
      resolution: expect.stringContaining('can no longer take effect') as unknown,
    });
    const release = (await readAttemptsOfOperation(h.db, operationId))
      .filter((a) => a.kind === 'release' && a.state === 'Succeeded')
      .at(-1);
    expect(release?.receipt).toMatchObject({ settledCalls: [provision?.attemptId] });
    expect((await releaseEnvironment()).status).toBe(200);
  });

  /**
   * A provider whose in-flight proof is wrong (its late create lands after the window its proof
   * claims): provisions go through `late`, which lands them after `ms`; everything else, and the
   * proof, through the harness's provider, whose window knows nothing of it.
   */
  const provisionsLandingLate = (ms: number) => {
    const late = new SimulatedProvider({ db: h.db, optionsRevision: h.provider.identity.optionsRevision });
    late.injectFault('provision', 'late-resource', ms);
    const p = h.provider;
    const provider: SandboxProvider = {
      identity: p.identity,
      optionsSnapshot: () => p.optionsSnapshot(),
      provision: (request, options) => late.provision(request, options),
      describe: (ref, options) => p.describe(ref, options),
      listOwned: (query, options) => p.listOwned(query, options),
      renew: (request, options) => p.renew(request, options),
      release: (request, options) => p.release(request, options),
      callSettled: (call, listedAt) => p.callSettled(call, listedAt),
    };
    return { provider, late };
  };

  /** Provision, abandon, Released under a wrong in-flight proof; then its create lands (live, unleased). */
  const releasedBeforeLateCreate = async () => {
    const { provider, late } = provisionsLandingLate(6_000);
    const setup = await startWorkersWith(h, provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
      lateSweepMs: 600_000,
    });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    // The first call timed out (Unknown). Waited for on its attempt row, not on the lease: the
    // lease moves between ReconciliationRequired and Provisioning retries faster than a poll
    // sees it on a loaded machine.
    await eventually('the first provision to be Unknown', async () => {
      const attempts = await readAttemptsOfOperation(h.db, operationId);
      return attempts.some((a) => a.kind === 'provision' && a.state === 'Unknown') ? true : undefined;
    });
    await abandonFirst();
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    await setup.close();
    await late.close();
    expect(await h.provider.countResources({ operationId })).toBe(1);
    return operationId;
  };

  it('finds a create that lands after the lease was Released (a wrong in-flight proof) by sweeping the terminal lease, and releases it', async () => {
    // The create lands after Released: a live resource no lease holds, and no result will say so.
    const operationId = await releasedBeforeLateCreate();
    expect(await cleanups()).toEqual([]);

    // The reconciler sweeps the terminal lease some time after it ended, and releases what it finds.
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
      lateSweepMs: 300,
    });
    const released = await eventually('the swept resource to be released', async () => {
      const [c] = await cleanups();
      return c?.state === 'Released' ? c : undefined;
    });
    expect(released).toMatchObject({ foundBy: 'owner-listing', source: { operationId } });
    expect(await h.provider.countResources({ operationId })).toBe(0);
    const sweeps = (await readAttemptsOfOperation(h.db, operationId)).filter((a) => a.kind === 'sweep');
    expect(sweeps.length).toBeGreaterThanOrEqual(1);
    expect((await releaseEnvironment()).status).toBe(200);
  });

  it('a sweep whose listing fails does not count: the next one finds the late create and releases it', async () => {
    // Found by the chaos run: both sweeps of a terminal lease failed with a 5xx, each counted as
    // done, and the late create stayed live for good.
    const operationId = await releasedBeforeLateCreate();
    // The first two listings fail.
    h.provider.injectFault('listOwned', 'server-error');
    h.provider.injectFault('listOwned', 'server-error');
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
      lateSweepMs: 200,
    });
    await eventually('the swept resource to be released', async () => {
      const [c] = await cleanups();
      return c?.state === 'Released' ? c : undefined;
    });
    expect(await h.provider.countResources({ operationId })).toBe(0);
    const sweeps = (await readAttemptsOfOperation(h.db, operationId)).filter((a) => a.kind === 'sweep');
    expect(sweeps.filter((a) => a.state !== 'Succeeded').length).toBeGreaterThanOrEqual(2);
    expect(sweeps.some((a) => a.state === 'Succeeded')).toBe(true);
  });

  it('a lease swept exactly twice is never due again, and the due scan reads only leases still to sweep', async () => {
    // Seen at scale: the scan counted sweep attempts of every terminal lease on every pass.
    const { operationId } = await terminalLease();
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
      lateSweepMs: 150,
    });
    await eventually('two exact sweeps', async () => {
      const sweeps = (await readAttemptsOfOperation(h.db, operationId)).filter((a) => a.kind === 'sweep');
      return sweeps.filter((a) => a.state === 'Succeeded').length === 2 ? true : undefined;
    });
    await workers.close();
    workers = undefined;
    const farFuture = new Date(Date.now() + 86_400_000);
    expect(await sweepsDue(h.db, farFuture, 150, 100)).toEqual([]);

    // The statement matches the partial index's predicate (a plan may pick it at all).
    const plan = await h.db.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sweepsDueStatement}`, [
        farFuture,
        150,
        100,
      ]);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('sandbox_leases_sweep_due');
  });

  it('a provision whose create lands after an empty listOwned ends with one live resource, the lease’s', async () => {
    h.provider.injectFault('provision', 'late-resource', 400);
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 100,
    });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    await sleep(600);
    expect(await h.provider.countResources({ operationId })).toBe(1);
    expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(1);
    const attempts = await readAttemptsOfOperation(h.db, operationId);
    expect(attempts.filter((a) => a.kind !== 'describe').map((a) => [a.kind, a.state])).toEqual([
      ['provision', 'Succeeded'],
      ['listOwned', 'Succeeded'],
      ['provision', 'Succeeded'],
    ]);
    expect(attempts[0]?.resolution).toContain('retry under the same operation');
    expect(await cleanups()).toEqual([]);
  });

  it('the reconcile route claims and releases one late resource and answers the terminal lease', async () => {
    const { operationId, late } = await recordedLateResource();
    const res = await h.request('POST', `${s.base}/sandbox/reconcile`, {
      token: s.token,
      body: { operationId, resourceGeneration: 1, providerFence: 1, networkPolicyGeneration: 1 },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      networkPolicy: { generation: 1, verified: true },
      operationId,
      state: 'Released',
      current: false,
      lateResourceCleanup: {
        state: 'Released',
        resourceId: late.resourceId,
        attempt: { state: 'Succeeded' },
      },
    });
    expect(await h.provider.countResources({ operationId: `${operationId}.late` })).toBe(0);
  });
});
