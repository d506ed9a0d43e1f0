// POST /internal/runtime/suspend/release-placement through the real HTTP app on PostgreSQL, embedded
// mode with workers: an Active sandbox, Core's suspend operation Fenced in the embedded RuntimeCore
// stand-in, a verified Workspace flush, Core's saved evidence (the flush's receipt hash), then
// Committed. The release goes to the provider only after Core confirms exactly that evidence; the
// lease is Released and the Workspace detached once the provider confirmed. A replay answers the
// same body without a second release; every refusal changes nothing. Each case owns an Environment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeOperation } from '../../actors/ports.ts';
import {
  moveRuntimeOperation,
  saveRuntimeOperationEvidence,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { SavedOperationEvidence } from '../../actors/runtime-core/runtime-operation.ts';
import { readLeaseByOperation } from '../../store/leases.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  activeSandbox,
  coreCommits as commitsWith,
  coreSuspends,
  flushVerified,
  stepRefOf,
  openSuspendBackend,
  ownerAbandons,
  type ActiveSandbox,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

const path = '/internal/runtime/suspend/release-placement';
const manifestSha256 = 'a'.repeat(64);
let h: Harness;
let runs = 0;
const key = new Uint8Array(32).fill(9);

let backend: SuspendBackend;
beforeAll(async () => {
  backend = await openSuspendBackend({ key, workers: { reconcileEveryMs: 300 } });
  ({ h } = backend);
}, 120_000);
afterAll(() => backend.close());

interface Flushed {
  sandbox: ActiveSandbox;
  /** Core's Fenced operation (revision 2), before any evidence is saved. */
  fenced: RuntimeOperation;
  /** The volume as the verified flush left it (revision N + 1, data generation D + 1). */
  volume: VolumeRow;
  evidence: SavedOperationEvidence;
}

/** An Active sandbox whose Workspace was flushed (verified) for Core's Fenced suspend operation. */
async function flushed(): Promise<Flushed> {
  const sandbox = await activeSandbox(h, `run-release-${++runs}`);
  const fenced = await coreSuspends(h, sandbox);
  const { volume, evidence } = await flushVerified(h, sandbox, fenced, manifestSha256);
  return { sandbox, fenced, volume, evidence };
}

/** Core saves `saved` for its operation and commits; answers the Committed operation as Core holds it. */
const coreCommits = (f: Flushed, saved: SavedOperationEvidence = f.evidence): Promise<RuntimeOperation> =>
  commitsWith(h, f.sandbox, f.fenced.operationId, saved);

const release = (f: Flushed, body: unknown) => h.request('POST', path, { token: f.sandbox.s.token, body });

const releaseAttempts = async (f: Flushed) =>
  (
    await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM provider_attempts WHERE environment_id = $1 AND kind = 'release'`,
      [f.sandbox.s.environmentId],
    )
  ).rows[0]?.n;

async function problem(res: Response, status: number, code: string) {
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as { type: string; detail: string };
  expect({ status: res.status, type: body.type }).toEqual({ status, type: `urn:sandlot:problem:${code}` });
  return body;
}

/** Nothing moved: the lease still Active, the volume where the flush left it, no release attempt. */
async function unchanged(f: Flushed) {
  expect((await readLeaseByOperation(h.db, f.sandbox.lease.operationId))?.state).toBe('Active');
  expect(await readVolume(h.db, f.volume.volumeId)).toEqual(f.volume);
  expect(await releaseAttempts(f)).toBe(0);
}

describe('POST /internal/runtime/suspend/release-placement', () => {
  it('releases the placement once Core confirms the saved flush evidence, and answers a replay the same', async () => {
    const f = await flushed();
    const operation = await coreCommits(f);
    const { lease } = f.sandbox;
    const N = f.fenced.workspace.transitionRevision;
    const D = f.sandbox.volume.dataGeneration;
    expect(f.volume).toMatchObject({ state: 'Attached', revision: N + 1, dataGeneration: D + 1 });

    const res = await release(f, { operation, evidence: f.evidence });
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Record<string, unknown>;
    // The flush moved the volume to N + 1; the detach that follows the provider's receipt moves
    // its revision once more (store/workspaces.ts detachVolume), never its data generation.
    expect(answer).toEqual({
      operationId: operation.operationId,
      state: 'Released',
      lease: {
        operationId: lease.operationId,
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
      },
      workspace: {
        volumeId: f.volume.volumeId,
        state: 'Available',
        transitionRevision: N + 2,
        dataGeneration: D + 1,
      },
    });
    expect(await readVolume(h.db, f.volume.volumeId)).toMatchObject({
      state: 'Available',
      attachedLease: null,
      revision: N + 2,
      dataGeneration: D + 1,
    });
    const released = await readLeaseByOperation(h.db, lease.operationId);
    expect(released?.state).toBe('Released');
    expect(released?.releaseReceipt).not.toBeNull();
    expect(await releaseAttempts(f)).toBe(1);
    const abandons = await h.db.query<{ event: { idempotencyKey: string } }>(
      `SELECT event FROM environment_journal WHERE environment_id = $1 AND event_type = 'sandbox.abandon'`,
      [f.sandbox.s.environmentId],
    );
    expect(abandons.rows.map((r) => r.event.idempotencyKey)).toEqual([
      `suspend-release:${operation.operationId}`,
    ]);

    // A replay (Core lost the answer): the same body, no second release, nothing moves.
    const again = await release(f, { operation, evidence: f.evidence });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(answer);
    expect(await releaseAttempts(f)).toBe(1);
    expect((await readVolume(h.db, f.volume.volumeId))?.revision).toBe(N + 2);

    // Once Core completed its operation, it is no longer current: a replay needs Core's word and
    // gets none, so it is refused (and still changes nothing).
    expect(
      await moveRuntimeOperation(h.db, stepRefOf(f.sandbox), operation.operationId, 3, 'completed'),
    ).toMatchObject({ result: 'moved' });
    await problem(
      await release(f, { operation, evidence: f.evidence }),
      409,
      'suspend-operation-not-current',
    );
    expect(await releaseAttempts(f)).toBe(1);
  });

  it('answers 202 Releasing while the release is in doubt, then the Released body, under one abandon', async () => {
    const f = await flushed();
    const operation = await coreCommits(f);
    // The provider releases, but its answer is lost: the lease waits for reconciliation.
    h.provider.injectFault('release', 'lost-response');
    const res = await release(f, { operation, evidence: f.evidence });
    expect(res.status).toBe(202);
    const pending = (await res.json()) as { state: string; workspace: { state: string } };
    expect(pending).toMatchObject({ state: 'Releasing', workspace: { state: 'Attached' } });

    // Repeated until the reconciler proved the resource gone: never a second abandon or release.
    let answer: { status: number; body: Record<string, unknown> } = { status: 202, body: {} };
    for (let i = 0; i < 50 && answer.status === 202; i += 1) {
      const again = await release(f, { operation, evidence: f.evidence });
      answer = { status: again.status, body: (await again.json()) as Record<string, unknown> };
      if (answer.status === 202) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      state: 'Released',
      workspace: {
        state: 'Available',
        transitionRevision: f.volume.revision + 1,
        dataGeneration: f.evidence.dataGeneration,
      },
    });
    // The reconciler's recovery released again under the same fence (listOwned, then release);
    // a second abandon would have re-fenced (a new fencing generation) and released once more.
    const fences = await h.db.query<{ fencing_generation: number }>(
      `SELECT DISTINCT fencing_generation FROM provider_attempts WHERE environment_id = $1 AND kind = 'release'`,
      [f.sandbox.s.environmentId],
    );
    expect(fences.rows).toHaveLength(1);
    const abandons = await h.db.query(
      `SELECT 1 FROM environment_journal WHERE environment_id = $1 AND event_type = 'sandbox.abandon'`,
      [f.sandbox.s.environmentId],
    );
    expect(abandons.rowCount).toBe(1);
  });

  it('refuses a placement that another release ended, without releasing again', async () => {
    const f = await flushed();
    const operation = await coreCommits(f);
    // The sandbox's owner abandons it after the flush, under its own key.
    await ownerAbandons(h, f.sandbox, 'user-abandon');
    const volume = await readVolume(h.db, f.volume.volumeId);
    const refused = await problem(
      await release(f, { operation, evidence: f.evidence }),
      409,
      'suspend-placement-mismatch',
    );
    expect(refused.detail).toContain('by another release');
    expect(await readVolume(h.db, f.volume.volumeId)).toEqual(volume);
    expect(await releaseAttempts(f)).toBe(1);
  });

  it('refuses evidence that is not the saved flush, before asking Core or the provider', async () => {
    const f = await flushed();
    const operation = await coreCommits(f);
    const other = await problem(
      await release(f, { operation, evidence: { ...f.evidence, hostReceiptSha256: 'b'.repeat(64) } }),
      409,
      'suspend-flush-evidence-mismatch',
    );
    expect(other.detail).toContain('receipt hash');
    await problem(
      await release(f, {
        operation,
        evidence: { ...f.evidence, dataGeneration: f.evidence.dataGeneration + 1 },
      }),
      409,
      'suspend-flush-evidence-mismatch',
    );
    await problem(
      await release(f, {
        operation,
        evidence: { ...f.evidence, transitionRevision: f.evidence.transitionRevision + 1 },
      }),
      409,
      'suspend-flush-evidence-mismatch',
    );
    await unchanged(f);
  });

  it('refuses unless Core holds exactly the offered operation, Committed', async () => {
    const f = await flushed();
    // Core still Fenced (its evidence saved, not committed).
    const ref = stepRefOf(f.sandbox);
    expect(await saveRuntimeOperationEvidence(h.db, ref, f.fenced.operationId, f.evidence)).toBe('created');
    await problem(
      await release(f, { operation: f.fenced, evidence: f.evidence }),
      409,
      'suspend-operation-state',
    );
    expect(await moveRuntimeOperation(h.db, ref, f.fenced.operationId, 2, 'committed')).toMatchObject({
      result: 'moved',
    });
    // The operation as held earlier (Fenced, revision 2) is not the one Core holds now.
    const stale = { ...f.fenced, state: 'committed', stateRevision: 2 };
    await problem(
      await release(f, { operation: stale, evidence: f.evidence }),
      409,
      'suspend-operation-changed',
    );
    await problem(
      await release(f, { operation: { ...f.fenced, operationId: 'op-other' }, evidence: f.evidence }),
      409,
      'suspend-operation-not-current',
    );
    await unchanged(f);
  });

  it('refuses when Core saved other evidence: Core does not confirm, the lease stays Active', async () => {
    const f = await flushed();
    const operation = await coreCommits(f, { ...f.evidence, manifestSha256: 'c'.repeat(64) });
    const refused = await problem(
      await release(f, { operation, evidence: f.evidence }),
      409,
      'suspend-release-not-confirmed',
    );
    expect(refused.detail).toContain('the evidence differs from what Core saved');
    await unchanged(f);
  });

  it('refuses when no verified flush exists for the operation', async () => {
    const sandbox = await activeSandbox(h, `run-release-${++runs}`);
    const fenced = await coreSuspends(h, sandbox);
    const f: Flushed = {
      sandbox,
      fenced,
      volume: sandbox.volume,
      evidence: {
        transitionRevision: fenced.workspace.transitionRevision,
        dataGeneration: sandbox.volume.dataGeneration + 1,
        hostReceiptSha256: 'd'.repeat(64),
        manifestSha256,
      },
    };
    const operation = await coreCommits(f);
    const body = await problem(
      await release(f, { operation, evidence: f.evidence }),
      409,
      'suspend-flush-evidence-mismatch',
    );
    expect(body.detail).toContain('no verified flush');
    await unchanged(f);
  });

  it('refuses unknown fields (400), another tenant (404) and answers 503 without a Core', async () => {
    const f = await flushed();
    const operation = await coreCommits(f);
    const extra = await release(f, { operation, evidence: f.evidence, receipt: {} });
    expect(extra.status).toBe(400);
    const foreign = { ...operation, ref: { ...operation.ref, tenantId: 'globex' } };
    expect((await release(f, { operation: foreign, evidence: f.evidence })).status).toBe(404);
    const bare = await buildHarness(backend.handle.db, { key, migrated: true, workers: false });
    await problem(
      await bare.request('POST', path, {
        token: f.sandbox.s.token,
        body: { operation, evidence: f.evidence },
      }),
      503,
      'runtime-core-unavailable',
    );
    await bare.close();
    await unchanged(f);
  });
});
