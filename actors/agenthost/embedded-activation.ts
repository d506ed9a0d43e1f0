// The embedded AgentHost's resume activation and session state, Host side: answers as a Host would
// on the wire, so the embedded port and a stand-in HTTPS Host serve the same answers. Invariants,
// held by migration 0021: one row per server-issued attempt, written once (a redelivery answers the
// saved receipt, another request under the same attempt ID is `attempt-conflict`); at most one
// Active session per lease (partial unique index), so a second attempt beside it is
// `session-active`. Losing a session (a restarted Host) marks the row, never deletes it: the
// session then reads Missing and a new attempt may activate. Recovery is the native cache the
// Workspace holds, else a rebuild from the saved journal (embedded-journal.ts) to the
// boundary the flush of this data generation saved, else a refusal (`journal-unavailable`).
import { createHash } from 'node:crypto';
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Queryable } from '../../store/db.ts';
import {
  configurationMatches,
  type ActivationRecovery,
  type ActivationRefusalCode,
  type ActivationRequestBody,
  type AgentHostActivationReceipt,
  type AgentHostSessionState,
  type SessionStateRequestBody,
} from './activation.ts';
import { rebuildJournal } from './embedded-journal.ts';
import { bindingDifference, hostBindingSchema, type HostBinding } from './flush.ts';

/** What the Host side needs of the embedded Host: its table, what it holds, its Workspace trees. */
export interface ActivationHostSide {
  db: Queryable;
  /** What the Host serving a lease holds now, or why it holds nothing. */
  held(leaseOperationId: string): Promise<HostBinding | string>;
  workspaceDirectory(volumeId: string): Promise<string>;
  /** Where a flush writes the native cache inside a Workspace tree. */
  nativeCachePath: string;
}

/** What a Host answers on the wire to an activation or a session state read. */
export type ActivationHostAnswer =
  { status: 200; body: unknown } | { status: 409; body: { refused: ActivationRefusalCode; message: string } };

/** A lever's change applied to an answer before it leaves the Host (a wrong or broken Host). */
export type AnswerChange = ((answer: Record<string, unknown>) => unknown) | undefined;

/** The request as recorded: everything asked, the configuration by its SHA-256 only. */
type StoredRequest = Omit<ActivationRequestBody, 'configuration'> & { configuration: { sha256: string } };

interface SavedActivation {
  request: StoredRequest;
  receipt: Record<string, unknown>;
}

/**
 * Activation on the Host serving `leaseOperationId`: the saved receipt for a redelivery, a refusal
 * for a conflicting or mismatched request or beside an Active session, else the receipt of a new
 * session recorded before it is answered.
 */
export async function hostActivate(
  host: ActivationHostSide,
  leaseOperationId: string,
  asked: ActivationRequestBody,
  change: AnswerChange,
): Promise<ActivationHostAnswer> {
  const answer = (receipt: Record<string, unknown>): ActivationHostAnswer => ({
    status: 200,
    body: change === undefined ? receipt : change(structuredClone(receipt)),
  });
  const { configuration, ...rest } = asked;
  const stored: StoredRequest = { ...rest, configuration: { sha256: configuration.sha256 } };

  const saved = await savedActivation(host.db, asked.attemptId);
  if (saved !== undefined) {
    return sameRequest(saved.request, stored)
      ? answer(saved.receipt)
      : refusal('attempt-conflict', 'this attempt was asked with another request');
  }
  if (!configurationMatches(asked)) {
    return refusal('configuration-mismatch', 'the configuration bytes do not match their SHA-256');
  }
  const held = await host.held(leaseOperationId);
  if (typeof held === 'string') return refusal('not-configured', held);
  if (bindingDifference(asked.binding, held) !== undefined) {
    return refusal('binding-mismatch', 'the Host holds another binding');
  }
  if ((await activeSession(host.db, leaseOperationId)) !== undefined) {
    return refusal('session-active', 'another attempt holds an Active session on this Host');
  }

  const cache = await nativeCache(
    join(await host.workspaceDirectory(held.workspaceVolumeId), host.nativeCachePath),
  );
  let recovery: ActivationRecovery;
  if (cache !== null) {
    recovery = { mode: 'NativeCache', cacheSha256: createHash('sha256').update(cache).digest('hex') };
  } else {
    // No native cache: rebuild from the saved journal, to exactly the boundary of the flush that
    // produced this data generation, or refuse. An empty rebuild is not a recovery.
    const rebuilt = await rebuildJournal(host.db, held.workspaceVolumeId, held.dataGeneration);
    if (typeof rebuilt === 'string') return refusal('journal-unavailable', rebuilt);
    recovery = {
      mode: 'JournalRebuild',
      nativeCache: 'PendingUntilAuthorizedTurn',
      sourceCacheSha256: rebuilt.sourceCacheSha256,
      checkpointId: rebuilt.boundary.checkpointId,
      upperPosition: rebuilt.boundary.upperPosition,
      journalSha256: rebuilt.boundary.journalSha256,
      attemptId: asked.attemptId,
    };
  }
  const receipt: AgentHostActivationReceipt = {
    binding: held,
    resumeOperationId: asked.resumeOperationId,
    attemptId: asked.attemptId,
    attemptSeq: asked.attemptSeq,
    bootstrapId: asked.bootstrapId,
    consumeId: asked.consumeId,
    exchangeId: asked.exchangeId,
    registrationId: asked.registration.registrationId,
    sessionId: asked.registration.sessionId,
    registrationGeneration: asked.registration.generation,
    configurationSha256: configuration.sha256,
    recovery,
    activatedAt: new Date().toISOString(),
  };
  const inserted = await host.db.query(
    `INSERT INTO embedded_agenthost_activations (attempt_id, lease_operation_id, resume_operation_id,
       attempt_seq, registration_id, configuration_sha256, request, receipt)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
    [
      asked.attemptId,
      leaseOperationId,
      asked.resumeOperationId,
      asked.attemptSeq,
      asked.registration.registrationId,
      configuration.sha256,
      JSON.stringify(stored),
      JSON.stringify(receipt),
    ],
  );
  if (inserted.rowCount === 1) return answer(receipt);
  // A concurrent activation won: the same attempt (a redelivery after all), the same attempt ID
  // with another request, or another attempt that took the lease's one Active session.
  const winner = await savedActivation(host.db, asked.attemptId);
  if (winner === undefined) {
    return refusal('session-active', 'another attempt holds an Active session on this Host');
  }
  return sameRequest(winner.request, stored)
    ? answer(winner.receipt)
    : refusal('attempt-conflict', 'this attempt was asked with another request');
}

/** The session state of the Host serving `leaseOperationId`, for the binding it holds. */
export async function hostSessionState(
  host: ActivationHostSide,
  leaseOperationId: string,
  asked: SessionStateRequestBody,
  change: AnswerChange,
): Promise<ActivationHostAnswer> {
  const held = await host.held(leaseOperationId);
  if (typeof held === 'string') return refusal('not-configured', held);
  if (bindingDifference(asked.binding, held) !== undefined) {
    return refusal('binding-mismatch', 'the Host holds another binding');
  }
  const active = await activeSession(host.db, leaseOperationId);
  const state: AgentHostSessionState =
    active === undefined
      ? { binding: held, state: 'Missing' }
      : {
          binding: held,
          state: 'Active',
          attemptId: active.attemptId,
          registrationId: active.registrationId,
        };
  return { status: 200, body: change === undefined ? state : change(structuredClone(state)) };
}

/** The Host serving `leaseOperationId` forgets its sessions, as a restarted Host would. */
export async function loseSessions(db: Queryable, leaseOperationId: string): Promise<void> {
  await db.query(
    `UPDATE embedded_agenthost_activations SET session_lost_at = now()
      WHERE lease_operation_id = $1 AND session_lost_at IS NULL`,
    [leaseOperationId],
  );
}

async function activeSession(
  db: Queryable,
  leaseOperationId: string,
): Promise<{ attemptId: string; registrationId: string } | undefined> {
  const result = await db.query<{ attemptId: string; registrationId: string }>(
    `SELECT attempt_id AS "attemptId", registration_id AS "registrationId"
       FROM embedded_agenthost_activations WHERE lease_operation_id = $1 AND session_lost_at IS NULL`,
    [leaseOperationId],
  );
  return result.rows[0];
}

async function savedActivation(db: Queryable, attemptId: string): Promise<SavedActivation | undefined> {
  const result = await db.query<SavedActivation>(
    `SELECT request, receipt FROM embedded_agenthost_activations WHERE attempt_id = $1`,
    [attemptId],
  );
  return result.rows[0];
}

/** The native cache's bytes when a regular file holds it, else null (no cache to recover from). */
async function nativeCache(path: string): Promise<Buffer | null> {
  try {
    if (!(await lstat(path)).isFile()) return null;
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** The same binding, attempt, registration and configuration (jsonb does not keep key order). */
function sameRequest(saved: StoredRequest, asked: StoredRequest): boolean {
  const binding = hostBindingSchema.safeParse(saved.binding);
  const scalars = [
    'resumeOperationId',
    'attemptId',
    'attemptSeq',
    'bootstrapId',
    'consumeId',
    'exchangeId',
  ] as const;
  const registration = ['registrationId', 'profileId', 'sessionId', 'generation'] as const;
  return (
    binding.success &&
    bindingDifference(asked.binding, binding.data) === undefined &&
    scalars.every((key) => saved[key] === asked[key]) &&
    registration.every((key) => saved.registration[key] === asked.registration[key]) &&
    saved.configuration.sha256 === asked.configuration.sha256
  );
}

function refusal(refused: ActivationRefusalCode, message: string): ActivationHostAnswer {
  return { status: 409, body: { refused, message } };
}
