// POST …/workspace-volumes/{volumeId}/flush through the real HTTP app on PostgreSQL, embedded mode:
// the embedded AgentHost keeps a real Workspace tree on disk, Core's suspend operation lives in the
// embedded RuntimeCore stand-in. Each case owns an Environment (its own run), since a flush moves
// its volume. Only a verified receipt advances the data generation; an uncertain delivery keeps its
// evidence and a repeat delivers the same flush; a refusal or a failed check advances nothing; a
// completed replay answers the saved receipt after asking Core afresh, with no second delivery.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import { NATIVE_CACHE_PATH } from '../../actors/agenthost/embedded.ts';
import { moveRuntimeOperation } from '../../actors/runtime-core/runtime-core-embedded.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { readVolume } from '../../store/workspaces.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  activeSandbox,
  coreSuspends,
  flushBodyOf,
  stepRefOf,
  openSuspendBackend,
  type ActiveSandbox,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

let h: Harness;
let host: EmbeddedAgentHost;
let stateDir: string;
let runs = 0;
const key = new Uint8Array(32).fill(7);

let backend: SuspendBackend;
beforeAll(async () => {
  backend = await openSuspendBackend({ key });
  ({ h, host, stateDir } = backend);
}, 120_000);
afterAll(() => backend.close());

const flushPath = (sandbox: ActiveSandbox) =>
  `${sandbox.s.base}/workspace-volumes/${sandbox.volume.volumeId}/flush`;
const flush = (sandbox: ActiveSandbox, body: unknown) =>
  h.request('POST', flushPath(sandbox), { token: sandbox.s.token, body });

async function fresh(): Promise<ActiveSandbox> {
  return activeSandbox(h, `run-flush-${++runs}`);
}

async function flushRows(sandbox: ActiveSandbox) {
  const { rows } = await h.db.query<Record<string, unknown>>(
    'SELECT state, deliveries, evidence, receipt, receipt_sha256 FROM workspace_flushes WHERE environment_id = $1',
    [sandbox.s.environmentId],
  );
  return rows;
}
const hostFlushes = async (sandbox: ActiveSandbox) =>
  Number(
    (
      await h.db.query<{ n: string }>(
        'SELECT count(*) AS n FROM embedded_agenthost_flushes WHERE workspace_volume_id = $1',
        [sandbox.volume.volumeId],
      )
    ).rows[0]?.n,
  );
const workspaceState = async (sandbox: ActiveSandbox) =>
  (
    await h.db.query<{ value: Record<string, string> }>(
      `SELECT snapshot->'value' AS value FROM environments WHERE environment_id = $1`,
      [sandbox.s.environmentId],
    )
  ).rows[0]?.value['workspace'];

async function problem(res: Response, status: number, code: string) {
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as { type: string; detail: string; flushOperationId?: string };
  expect({ status: res.status, type: body.type }).toEqual({ status, type: `urn:sandlot:problem:${code}` });
  return body;
}

describe('POST …/workspace-volumes/{volumeId}/flush', () => {
  it('delivers the flush, saves the receipt and advances the data generation by one, once', async () => {
    const sandbox = await fresh();
    const operation = await coreSuspends(h, sandbox);
    const body = flushBodyOf(operation, sandbox.volume);
    const res = await flush(sandbox, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const answer = (await res.json()) as { flush: Record<string, unknown>; replayed: boolean };
    const receipt = answer.flush['receipt'] as { flush: { treeHash: string; nextDataGeneration: number } };
    expect(answer.replayed).toBe(false);
    expect(answer.flush).toMatchObject({
      operationId: operation.operationId,
      volumeId: sandbox.volume.volumeId,
      state: 'Verified',
      transitionRevision: sandbox.volume.revision,
      dataGeneration: sandbox.volume.dataGeneration,
      nextDataGeneration: sandbox.volume.dataGeneration + 1,
      deliveries: 1,
      hostReceiptSha256: sha256Hex(canonicalJson(receipt)),
    });
    expect(receipt.flush.nextDataGeneration).toBe(sandbox.volume.dataGeneration + 1);
    // The volume moved with the receipt; the Host wrote its native cache into the real tree.
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toMatchObject({
      state: 'Attached',
      dataGeneration: sandbox.volume.dataGeneration + 1,
      revision: sandbox.volume.revision + 1,
    });
    const cache = await readFile(
      join(stateDir, 'workspaces', sandbox.volume.volumeId, NATIVE_CACHE_PATH),
      'utf8',
    );
    expect(JSON.parse(cache)).toMatchObject({ flush: answer.flush['flushOperationId'] });
    expect(await workspaceState(sandbox)).toBe('Flushed');
    const journal = await h.db.query<{ event_type: string }>(
      `SELECT event_type FROM environment_journal WHERE environment_id = $1 AND event_type LIKE 'workspace.%' ORDER BY revision`,
      [sandbox.s.environmentId],
    );
    expect(journal.rows.map((r) => r.event_type)).toEqual(['workspace.flushReserve', 'workspace.flushed']);

    // The flushed lease is suspending: its readiness says so, and it takes no new work.
    const inspected = (await (
      await h.request('GET', `${sandbox.s.base}/sandbox?networkPolicyGeneration=1`, {
        token: sandbox.s.token,
      })
    ).json()) as {
      readyForDispatch: boolean;
      conditions: { type: string; status: string; reason: string }[];
    };
    expect(inspected.readyForDispatch).toBe(false);
    expect(inspected.conditions.find((c) => c.type === 'WorkspaceAttached')).toMatchObject({
      status: 'False',
      reason: 'FlushedForSuspend',
    });

    // Replay after a lost answer: the saved receipt, no second delivery, nothing moves again.
    const again = await flush(sandbox, body);
    expect(again.status).toBe(200);
    const replayed = (await again.json()) as { flush: Record<string, unknown>; replayed: boolean };
    expect(replayed).toEqual({ ...answer, replayed: true });
    expect(await hostFlushes(sandbox)).toBe(1);
    // The Environment's flush list shows the same record, and asks no Host.
    const listed = await h.request('GET', `${sandbox.s.base}/workspace-flushes`, { token: sandbox.s.token });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('cache-control')).toBe('no-store');
    expect(await listed.json()).toEqual({ flushes: [answer.flush] });
    expect(await hostFlushes(sandbox)).toBe(1);
    expect((await readVolume(h.db, sandbox.volume.volumeId))?.dataGeneration).toBe(
      sandbox.volume.dataGeneration + 1,
    );

    // The saved receipt alone authorizes nothing: once Core abandoned the operation, no answer.
    expect(
      await moveRuntimeOperation(h.db, stepRefOf(sandbox), operation.operationId, 2, 'abandoned'),
    ).toMatchObject({ result: 'moved' });
    await problem(await flush(sandbox, body), 409, 'suspend-operation-not-current');
  });

  it('refuses before any effect unless Core holds exactly this Fenced request', async () => {
    const sandbox = await fresh();
    const reserved = await coreSuspends(h, sandbox, { states: [] });
    await problem(
      await flush(sandbox, flushBodyOf(reserved, sandbox.volume)),
      409,
      'suspend-operation-state',
    );
    await moveRuntimeOperation(h.db, stepRefOf(sandbox), reserved.operationId, 1, 'fenced');
    const body = flushBodyOf(reserved, sandbox.volume);
    await problem(
      await flush(sandbox, { ...body, transitionRevision: body.transitionRevision + 1 }),
      409,
      'suspend-request-mismatch',
    );
    await problem(
      await flush(sandbox, { ...body, nextDataGeneration: body.nextDataGeneration + 1 }),
      409,
      'workspace-transition-stale',
    );
    await problem(
      await flush(sandbox, { ...body, operationId: 'op-other' }),
      409,
      'suspend-operation-not-current',
    );
    // Workspace evidence from a caller is not a field at all.
    const extra = await flush(sandbox, { ...body, receipt: { flush: {} } });
    expect(extra.status).toBe(400);
    expect(await flushRows(sandbox)).toEqual([]);
    expect(await hostFlushes(sandbox)).toBe(0);
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);
  });

  it('keeps an unanswered delivery uncertain with its evidence; the same request then delivers the same flush', async () => {
    const sandbox = await fresh();
    const operation = await coreSuspends(h, sandbox);
    const body = flushBodyOf(operation, sandbox.volume);
    host.dropNextCall();
    const lost = await problem(await flush(sandbox, body), 503, 'workspace-flush-uncertain');
    expect(lost.flushOperationId).toMatch(/^wf_/);
    const [uncertain] = await flushRows(sandbox);
    expect(uncertain).toMatchObject({ state: 'Uncertain', deliveries: 1, receipt: null });
    expect(uncertain?.['evidence']).toMatchObject({ reason: 'unreachable' });
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);
    expect(await workspaceState(sandbox)).toBe('Flushing');

    // An answer that names something else is not believed either.
    host.tamperNextAnswer((receipt) => ({
      ...receipt,
      flush: { ...(receipt['flush'] as object), transitionRevision: 99 },
    }));
    await problem(await flush(sandbox, body), 503, 'workspace-flush-uncertain');
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);

    const res = await flush(sandbox, body);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { flush: { state: string; deliveries: number } };
    expect(answer.flush).toMatchObject({ state: 'Verified', deliveries: 3 });
    // The Host flushed once; the later deliveries were answered its saved receipt.
    expect(await hostFlushes(sandbox)).toBe(1);
    expect((await readVolume(h.db, sandbox.volume.volumeId))?.dataGeneration).toBe(
      sandbox.volume.dataGeneration + 1,
    );
  });

  it('closes a flush the Host refused without advancing anything, and answers the refusal again', async () => {
    const sandbox = await fresh();
    const operation = await coreSuspends(h, sandbox);
    const body = flushBodyOf(operation, sandbox.volume);
    host.failNextFlush();
    const refused = await problem(await flush(sandbox, body), 409, 'workspace-flush-refused');
    expect(refused.detail).toContain('flush-failed');
    await problem(await flush(sandbox, body), 409, 'workspace-flush-refused');
    expect(await flushRows(sandbox)).toEqual([
      expect.objectContaining({ state: 'Refused', deliveries: 1, receipt: null }),
    ]);
    expect(await hostFlushes(sandbox)).toBe(0);
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);
    expect(await workspaceState(sandbox)).toBe('Steady');
  });

  it("after a refusal, Core's next suspend operation flushes the same volume transition", async () => {
    const sandbox = await fresh();
    const first = await coreSuspends(h, sandbox);
    host.failNextFlush();
    await problem(await flush(sandbox, flushBodyOf(first, sandbox.volume)), 409, 'workspace-flush-refused');
    expect(
      await moveRuntimeOperation(h.db, stepRefOf(sandbox), first.operationId, 2, 'abandoned'),
    ).toMatchObject({ result: 'moved' });
    const next = await coreSuspends(h, sandbox, { operationId: `op-suspend-again-${sandbox.run}` });
    expect(next.workspace.transitionRevision).toBe(first.workspace.transitionRevision);
    const res = await flush(sandbox, flushBodyOf(next, sandbox.volume));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { flush: { state: string } }).flush.state).toBe('Verified');
    expect((await flushRows(sandbox)).map((r) => r['state']).sort()).toEqual(['Refused', 'Verified']);
  });

  it('answers 503 runtime-core-unavailable where no Core is configured, writing nothing', async () => {
    const bare = await buildHarness(backend.handle.db, { key, migrated: true, workers: false });
    const sandbox = await fresh();
    const res = await bare.request('POST', flushPath(sandbox), {
      token: sandbox.s.token,
      body: { stepId: 'agent_1', operationId: 'op-x', transitionRevision: 2, nextDataGeneration: 2 },
    });
    await problem(res, 503, 'runtime-core-unavailable');
    expect(await flushRows(sandbox)).toEqual([]);
    await bare.close();
  });
});
