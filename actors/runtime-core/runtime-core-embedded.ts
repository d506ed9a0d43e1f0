// The embedded RuntimeCore: stands in for Core's suspend/resume side from our own tables
// (store/runtime-core-stand-in.ts) where no Core service is configured. It answers what an
// operator registered through the embedded admin routes (http/routes/admin-runtime-core.ts):
// operations with their saved evidence and state, and Runtime registrations. It authorizes by
// tenant only (another tenant's step reads as absent) and runs every answer through the same
// strict parse and reference check as the HTTP adapter, so the RuntimeCore contract holds for both.
import type { Database, Queryable } from '../../store/db.ts';
import {
  moveOperation,
  putEvidence,
  putOperation,
  putRegistration,
  readCurrentOperation,
  readCurrentRegistration,
  readOperation,
  type MoveOutcome,
  type PutEvidenceResult,
  type PutOperationResult,
  type PutRegistrationResult,
  type RuntimeOperationRow,
} from '../../store/runtime-core-stand-in.ts';
import type {
  CoreActor,
  RuntimeCore,
  RuntimeOperation,
  RuntimeRegistration,
  RuntimeStepRef,
  SavedOperationEvidence,
  SavedOperationVerdict,
} from '../ports.ts';
import { admitRuntimeCall } from './runtime-checks.ts';
import { CoreAnswerRefusedError } from '../build-test/core-errors.ts';
import {
  acceptRuntimeAnswer,
  runtimeHash,
  runtimeOperationSchema,
  runtimeOperationTermsSchema,
  runtimeRegistrationSchema,
  runtimeStepRefSchema,
  sameStep,
  savedOperationEvidenceSchema,
  type RuntimeOperationState,
  type RuntimeOperationTerms,
} from './runtime-operation.ts';

export class EmbeddedRuntimeCore implements RuntimeCore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async currentRuntimeOperation(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
    via: Queryable = this.db,
  ): Promise<RuntimeOperation | null> {
    admitRuntimeCall(actor, signal, this.now());
    if (actor.tenantId !== ref.tenantId) return null;
    const row = await readCurrentOperation(via, ref);
    return row === null ? null : operationOf(row, ref);
  }

  async confirmSavedOperation(
    actor: CoreActor,
    operation: RuntimeOperation,
    evidence: SavedOperationEvidence,
    signal: AbortSignal,
    via: Queryable = this.db,
  ): Promise<SavedOperationVerdict> {
    admitRuntimeCall(actor, signal, this.now());
    const row = await readOperation(via, operation.operationId);
    if (row === null || row.ref.tenantId !== actor.tenantId) {
      return { confirmed: false, reason: 'Core knows no such operation' };
    }
    return judgeSavedOperation(operationOf(row, row.ref), operation, row.savedEvidenceHash, evidence);
  }

  async currentRuntimeRegistration(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
    via: Queryable = this.db,
  ): Promise<RuntimeRegistration | null> {
    admitRuntimeCall(actor, signal, this.now());
    if (actor.tenantId !== ref.tenantId) return null;
    const row = await readCurrentRegistration(via, ref);
    // Parsed like an HTTP answer: a stored row that no longer parses is a broken stand-in, not an answer.
    return row === null ? null : acceptRuntimeAnswer(runtimeRegistrationSchema, row, ref, 'registration');
  }
}

/** Core's verdict on held evidence: the operation as held, not abandoned, with exactly that evidence. */
export function judgeSavedOperation(
  current: RuntimeOperation,
  held: RuntimeOperation,
  savedEvidenceHash: string | null,
  evidence: SavedOperationEvidence,
): SavedOperationVerdict {
  if (current.state === 'abandoned') return { confirmed: false, reason: 'the operation was abandoned' };
  if (runtimeHash(current) !== runtimeHash(held)) {
    return { confirmed: false, reason: 'the operation is not the one held (it changed or moved on)' };
  }
  if (savedEvidenceHash === null)
    return { confirmed: false, reason: 'Core saved no evidence for this operation' };
  if (savedEvidenceHash !== runtimeHash(evidence)) {
    return { confirmed: false, reason: 'the evidence differs from what Core saved' };
  }
  return { confirmed: true };
}

function operationOf(row: RuntimeOperationRow, asked: RuntimeStepRef): RuntimeOperation {
  const terms = runtimeOperationTermsSchema.safeParse(row.terms);
  if (!terms.success) throw new CoreAnswerRefusedError('malformed', 'a stored operation does not parse');
  return acceptRuntimeAnswer(
    runtimeOperationSchema,
    {
      ...terms.data,
      ref: row.ref,
      operationId: row.operationId,
      state: row.state,
      stateRevision: row.stateRevision,
    },
    asked,
    'operation',
  );
}

/** Reserves an operation for a step, as Core would when it starts a suspend or resume. */
export function registerRuntimeOperation(
  db: Database,
  operation: { ref: RuntimeStepRef; operationId: string; terms: RuntimeOperationTerms },
  createdBy: string,
): Promise<PutOperationResult> {
  const ref = runtimeStepRefSchema.parse(operation.ref);
  const terms = runtimeOperationTermsSchema.parse(operation.terms);
  return putOperation(db, {
    ref,
    operationId: operation.operationId,
    kind: terms.kind,
    terms,
    termsHash: runtimeHash(terms),
    createdBy,
  });
}

/** Saves the evidence Core will confirm for an operation (once, while Reserved or Fenced). */
export async function saveRuntimeOperationEvidence(
  db: Database,
  ref: RuntimeStepRef,
  operationId: string,
  evidence: SavedOperationEvidence,
): Promise<PutEvidenceResult> {
  const canonical = savedOperationEvidenceSchema.parse(evidence);
  if (!(await operationOfStep(db, ref, operationId))) return 'unknown-operation';
  return putEvidence(db, { operationId, evidence: canonical, evidenceHash: runtimeHash(canonical) });
}

/** Moves an operation's state from the revision the caller read (see store `allowedMoves`). */
export async function moveRuntimeOperation(
  db: Database,
  ref: RuntimeStepRef,
  operationId: string,
  fromRevision: number,
  to: RuntimeOperationState,
): Promise<MoveOutcome> {
  if (!(await operationOfStep(db, ref, operationId))) return { result: 'unknown-operation' };
  return moveOperation(db, { operationId, fromRevision, to });
}

/** Whether the operation exists under exactly this step (its step never changes once reserved). */
async function operationOfStep(db: Database, ref: RuntimeStepRef, operationId: string): Promise<boolean> {
  const row = await readOperation(db, operationId);
  return row !== null && sameStep(row.ref, ref);
}

/** Registers a Runtime for a step at exactly its next generation. */
export function registerRuntimeRegistration(
  db: Database,
  registration: RuntimeRegistration,
  createdBy: string,
): Promise<PutRegistrationResult> {
  const canonical = runtimeRegistrationSchema.parse(registration);
  return putRegistration(db, { ...canonical, createdBy });
}
