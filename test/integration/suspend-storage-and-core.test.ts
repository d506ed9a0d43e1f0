// The checks a suspend's Workspace steps make after the owner's database waits, on PostgreSQL in
// embedded mode: storage is read back before the flush is reserved and again after the Host's
// delivery (a PVC replaced under its name refuses, and after the delivery keeps the receipt as
// uncertain evidence, never applied), and Core is asked inside the owner transaction that commits
// each step (the flush's reservation and outcome, the placement release and its detach, resume
// prepare) while the Environment's lock is held.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeCore } from '../../actors/ports.ts';
import { EmbeddedRuntimeCore } from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { Database } from '../../store/db.ts';
import { readVolume } from '../../store/workspaces.ts';
import type { Harness } from '../support/harness.ts';
import { prepareResume, suspended } from '../support/resume-flow.ts';
import {
  activeSandbox,
  coreSuspends,
  flushBodyOf,
  openSuspendBackend,
  type ActiveSandbox,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

/** One question put to Core: which, for which kind of operation, and whether the owner's lock was held. */
interface CoreCall {
  method: 'currentRuntimeOperation' | 'confirmSavedOperation';
  kind: string | undefined;
  ownerLocked: boolean;
}

/** Whether some transaction holds the Environment's advisory lock now (migrations/0011). */
async function ownerLocked(db: Database, environmentId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ got: boolean }>(
      `SELECT pg_try_advisory_xact_lock(hashtextextended('environment:' || $1, 0)) AS got`,
      [environmentId],
    );
    return rows[0]?.got !== true;
  });
}

/** The embedded Core, noting for every question whether it was asked under the owner's lock. */
function recordingCore(db: Database, calls: CoreCall[]): RuntimeCore {
  const core = new EmbeddedRuntimeCore(db);
  return Object.assign(Object.create(core) as RuntimeCore, {
    async currentRuntimeOperation(...args: Parameters<RuntimeCore['currentRuntimeOperation']>) {
      const locked = await ownerLocked(db, args[1].environmentId);
      const answer = await core.currentRuntimeOperation(...args);
      calls.push({ method: 'currentRuntimeOperation', kind: answer?.kind, ownerLocked: locked });
      return answer;
    },
    async confirmSavedOperation(...args: Parameters<RuntimeCore['confirmSavedOperation']>) {
      const locked = await ownerLocked(db, args[1].ref.environmentId);
      calls.push({ method: 'confirmSavedOperation', kind: args[1].kind, ownerLocked: locked });
      return core.confirmSavedOperation(...args);
    },
  });
}

let backend: SuspendBackend;
let h: Harness;
const calls: CoreCall[] = [];
let runs = 0;

beforeAll(async () => {
  backend = await openSuspendBackend((db) => ({ runtimeCore: recordingCore(db, calls) }));
  h = backend.h;
}, 120_000);
afterAll(() => backend.close());

const flushOf = (sandbox: ActiveSandbox, body: unknown) =>
  h.request('POST', `${sandbox.s.base}/workspace-volumes/${sandbox.volume.volumeId}/flush`, {
    token: sandbox.s.token,
    body,
  });

/** Storage answers another PVC under the volume's PVC name: a new UID, its owner annotations kept. */
const replacePvc = (volumeId: string) =>
  h.db.query('UPDATE embedded_workspace_storage SET pvc_uid = $2, pv_claim_uid = $2 WHERE volume_id = $1', [
    volumeId,
    randomUUID(),
  ]);

async function flushRows(sandbox: ActiveSandbox) {
  const { rows } = await h.db.query<{ state: string; evidence: Record<string, unknown> | null }>(
    'SELECT state, evidence FROM workspace_flushes WHERE environment_id = $1',
    [sandbox.s.environmentId],
  );
  return rows;
}

async function problemType(res: Response): Promise<string> {
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return ((await res.json()) as { type: string }).type;
}

describe('a suspend flush and the storage it seals', () => {
  it('refuses a flush whose PVC was replaced under its name, before anything is reserved', async () => {
    const sandbox = await activeSandbox(h, `run-storage-${++runs}`);
    const fenced = await coreSuspends(h, sandbox);
    await replacePvc(sandbox.volume.volumeId);
    const res = await flushOf(sandbox, flushBodyOf(fenced, sandbox.volume));
    expect(res.status).toBe(409);
    expect(await problemType(res)).toBe('urn:sandlot:problem:workspace-pvc-replaced');
    expect(await flushRows(sandbox)).toEqual([]);
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);
  });

  it('keeps a delivered flush uncertain when its PVC was replaced during the delivery', async () => {
    const sandbox = await activeSandbox(h, `run-storage-${++runs}`);
    const fenced = await coreSuspends(h, sandbox);
    const { host } = backend;
    const deliver = host.flush.bind(host);
    host.flush = async (...args) => {
      const receipt = await deliver(...args);
      await replacePvc(sandbox.volume.volumeId);
      return receipt;
    };
    try {
      const res = await flushOf(sandbox, flushBodyOf(fenced, sandbox.volume));
      expect(res.status).toBe(409);
      expect(await problemType(res)).toBe('urn:sandlot:problem:workspace-pvc-replaced');
    } finally {
      host.flush = deliver;
    }
    // The receipt is kept as evidence, never applied: the flush stays open, the volume where it was.
    const [row] = await flushRows(sandbox);
    expect(row?.state).toBe('Uncertain');
    expect(row?.evidence).toMatchObject({ reason: 'workspace-pvc-replaced', receipt: { flush: {} } });
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toEqual(sandbox.volume);
  });
});

describe('Core is asked after the owner waits, inside the transaction that commits', () => {
  it('for the flush, the placement release, its detach and resume prepare', async () => {
    calls.length = 0;
    const s = await suspended(h, backend.host, `run-core-${++runs}`);
    const locked = (method: CoreCall['method'], kind: string) =>
      calls.filter((c) => c.method === method && c.kind === kind && c.ownerLocked).length;
    // Resolve's own step, the flush's reservation and its verified outcome, under the lock.
    expect(locked('currentRuntimeOperation', 'suspend')).toBeGreaterThanOrEqual(2);
    // The release's abandon and the Workspace's detach, each confirmed under the lock.
    expect(locked('confirmSavedOperation', 'suspend')).toBeGreaterThanOrEqual(2);
    const before = calls.length;
    const res = await prepareResume(h, s);
    expect(res.status).toBe(200);
    const prepare = calls.slice(before);
    expect(prepare.filter((c) => c.kind === 'resume' && c.ownerLocked).length).toBeGreaterThanOrEqual(2);
  });
});
