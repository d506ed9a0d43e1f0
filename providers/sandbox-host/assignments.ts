// The control plane's side of assignments: it issues signed envelopes to enrolled hosts, serves them
// to the polling host, and records each host-signed result. Invariants (migration 0024):
// - per host, sequences are 1, 2, 3, ... without gaps: the next one is allocated under the host
//   row's lock, in the same transaction that stores the envelope;
// - exact replay: an operation id is issued once per host; issuing it again, from this process or
//   a restarted one, answers the stored envelope, and every envelope leaves here as the canonical
//   JSON of the stored wire, so the bytes a host sees never change (its digest is re-checked);
// - a result is stored only after it verifies against the host's enrolled result keys and the
//   stored envelope's digest, and only once: the same result again is an idempotent replay, a
//   different one for the same envelope is refused (`result-conflict`) and changes nothing;
// - the control plane never signs an envelope the host would refuse for a reason known here: the
//   signer must be the current persisted control key, valid now, and the fence of a mutating kind
//   (provision, renew, release) may not fall below one already issued by a mutating kind for the
//   Environment on that host. Reads (describe, listOwned) change nothing, so their fence is neither
//   checked nor counted: a read with a foreign fence never locks out the lease's real one. An
//   envelope the host declines anyway (it expired in transit) is answered with a signed refusal
//   and stored as Reported like any result, so nothing stalls.
import { createPublicKey } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { Database } from '../../store/db.ts';
import {
  type AssignmentRow,
  insertAssignment,
  markReported,
  readAssignmentByOperation,
  readAssignmentsToServe,
  readHostHighWater,
} from '../../store/sandbox-host-assignments.ts';
import { lockHost, readHostResultKeys } from '../../store/sandbox-hosts.ts';
import type { ControlHandlers } from './control-listener.ts';
import { MAX_ENVELOPES_PER_ANSWER } from './control-wire.ts';
import { HostEnrollmentError } from './enrollment-errors.ts';
import {
  envelopeWireSchema,
  firstIssue,
  isMutatingKind,
  MUTATING_KINDS,
  type OperationKind,
} from './envelope-schema.ts';
import { envelopeDigest, type EnvelopeSigner, type EnvelopeWire, signEnvelope } from './envelope.ts';
import { EnvelopeSigningError, HostResultRefusedError } from './errors.ts';
import { type HostVerificationKey, hostResultWireSchema, verifyHostResult } from './host-result.ts';
import { fixedCodeError } from './sandbox-host-error.ts';
import { documentDigest } from './signing.ts';
import { loadTrust } from './trust-store.ts';
import { keyValidAt } from './trust.ts';

type Clock = () => Date;
const wallClock: Clock = () => new Date();

/** The same operation id asked for with another binding: the stored envelope stands. */
export class AssignmentConflictError extends fixedCodeError({
  code: 'assignment-conflict',
  status: 409,
  title: 'Assignment conflicts with the one issued',
  subject: 'assignment conflict',
}) {}

/** A fence below one already issued to the host for the Environment. */
export class AssignmentStaleFenceError extends fixedCodeError({
  code: 'assignment-stale-fence',
  status: 409,
  title: 'Assignment fence is stale',
  subject: 'assignment refused',
}) {}

/** A stored envelope that no longer parses or matches its digest: never served. */
export class AssignmentStoreCorruptError extends fixedCodeError({
  code: 'assignment-store-corrupt',
  status: 500,
  title: 'Assignment store inconsistent',
  subject: 'assignment store',
}) {}

/** What the control plane has already authorized, for one host. */
export interface AssignmentRequest {
  hostId: string;
  tenantId: string;
  principal: { subject: string };
  operation: { id: string; kind: OperationKind };
  lease: { environmentId: string; operationId: string; resourceGeneration: number };
  fence: { providerFence: number };
  /** The effective spec and capability snapshot the envelope seals. */
  spec: Record<string, unknown>;
  capabilities: Record<string, unknown>;
  /** How long after issue the host may still accept the envelope. */
  ttlMs: number;
}

export interface IssuedAssignment {
  sequence: number;
  envelope: EnvelopeWire;
  envelopeDigest: string;
  /** True when the operation was issued before and the stored envelope was answered. */
  replayed: boolean;
}

/** The stored wire as it travels: canonical key order, digest re-checked. */
function storedWire(row: AssignmentRow): EnvelopeWire {
  const parsed = envelopeWireSchema.safeParse(row.envelope);
  if (!parsed.success) {
    throw new AssignmentStoreCorruptError(
      `host ${row.hostId} sequence ${row.sequence}: ${firstIssue(parsed.error)}`,
    );
  }
  const wire = JSON.parse(canonicalJson(parsed.data)) as EnvelopeWire;
  if (envelopeDigest(wire) !== row.envelopeSha256) {
    throw new AssignmentStoreCorruptError(`host ${row.hostId} sequence ${row.sequence}: digest differs`);
  }
  return wire;
}

/** The binding fields a repeated request must share with the stored envelope. */
function sameBinding(wire: EnvelopeWire, request: AssignmentRequest): boolean {
  const { body } = wire;
  return (
    body.tenantId === request.tenantId &&
    body.principal.subject === request.principal.subject &&
    body.operation.kind === request.operation.kind &&
    body.effectiveSpec.sha256 === documentDigest(request.spec) &&
    body.capabilitySnapshot.sha256 === documentDigest(request.capabilities) &&
    body.lease.environmentId === request.lease.environmentId &&
    body.lease.operationId === request.lease.operationId &&
    body.lease.resourceGeneration === request.lease.resourceGeneration &&
    body.fence.providerFence === request.fence.providerFence
  );
}

function replayOf(row: AssignmentRow, request: AssignmentRequest): IssuedAssignment {
  const envelope = storedWire(row);
  if (!sameBinding(envelope, request)) {
    throw new AssignmentConflictError(`host ${row.hostId} operation ${row.operationId}: another binding`);
  }
  return { sequence: row.sequence, envelope, envelopeDigest: row.envelopeSha256, replayed: true };
}

/** Refuses a signer that is not the persisted current control key, valid now; gives the epoch. */
async function currentEpoch(db: Database, signer: EnvelopeSigner, now: Date): Promise<number> {
  const trust = await loadTrust(db);
  if (trust === null) throw new EnvelopeSigningError('no control verification trust is established');
  const current = trust.current;
  if (signer.version !== current.version || !createPublicKey(signer.privateKey).equals(current.publicKey)) {
    throw new EnvelopeSigningError(`the signer is not the current control key (version ${current.version})`);
  }
  if (!keyValidAt(current, now)) {
    throw new EnvelopeSigningError(`control key version ${current.version} is outside its validity`);
  }
  return trust.revocationEpoch;
}

/**
 * Issues one envelope: the stored one when the operation was issued to the host before, otherwise
 * the next sequence, signed and stored in one transaction under the host's lock.
 */
export async function issueAssignment(
  db: Database,
  signer: EnvelopeSigner,
  request: AssignmentRequest,
  now: Clock = wallClock,
): Promise<IssuedAssignment> {
  const known = await readAssignmentByOperation(db, request.hostId, request.operation.id);
  if (known !== null) return replayOf(known, request);
  const issuedAt = now();
  const revocationEpoch = await currentEpoch(db, signer, issuedAt);
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, request.hostId);
    if (host?.state !== 'Enrolled') {
      throw new HostEnrollmentError('host-not-enrolled', `host ${request.hostId}`);
    }
    const raced = await readAssignmentByOperation(tx, request.hostId, request.operation.id);
    if (raced !== null) return replayOf(raced, request);
    const high = await readHostHighWater(tx, request.hostId, request.lease.environmentId, MUTATING_KINDS);
    if (isMutatingKind(request.operation.kind) && request.fence.providerFence < high.highestFence) {
      throw new AssignmentStaleFenceError(
        `fence ${request.fence.providerFence} is below ${high.highestFence} issued for the Environment`,
      );
    }
    const sequence = high.lastSequence + 1;
    const signed = signEnvelope(
      {
        tenantId: request.tenantId,
        principal: request.principal,
        operation: request.operation,
        effectiveSpec: request.spec,
        capabilitySnapshot: request.capabilities,
        lease: request.lease,
        fence: request.fence,
        hostId: request.hostId,
        sequence,
        issuedAt,
        expiresAt: new Date(issuedAt.getTime() + request.ttlMs),
        revocationEpoch,
      },
      signer,
    );
    const envelopeJson = canonicalJson(signed);
    const envelope = JSON.parse(envelopeJson) as EnvelopeWire;
    const digest = envelopeDigest(envelope);
    await insertAssignment(
      tx,
      {
        hostId: request.hostId,
        sequence,
        operationId: request.operation.id,
        operationKind: request.operation.kind,
        envelopeJson,
        envelopeSha256: digest,
        environmentId: request.lease.environmentId,
        leaseOperationId: request.lease.operationId,
        resourceGeneration: request.lease.resourceGeneration,
        providerFence: request.fence.providerFence,
      },
      issuedAt,
    );
    return { sequence, envelope, envelopeDigest: digest, replayed: false };
  });
}

/** The host's envelopes above `after`, and any still waiting for a result, in sequence order. */
export async function assignmentsAfter(db: Database, hostId: string, after: number): Promise<EnvelopeWire[]> {
  const rows = await readAssignmentsToServe(db, hostId, after, MAX_ENVELOPES_PER_ANSWER);
  return rows.map(storedWire);
}

/** The Enrolled host's result-signing keys (none for a retired or unknown host). */
export async function loadHostResultKeys(db: Database, hostId: string): Promise<HostVerificationKey[]> {
  const rows = await readHostResultKeys(db, hostId);
  return rows.map((row) => ({
    hostId: row.hostId,
    version: row.keyVersion,
    publicKey: createPublicKey(row.publicKeyPem),
  }));
}

export interface RecordedResult {
  sequence: number;
  /** True when this exact result was stored before (a host reporting again). */
  replayed: boolean;
}

/**
 * Verifies a host result against `hostKeys` and the stored assignment it answers, then stores it
 * once. Every refusal is a HostResultRefusedError, and a refused result writes nothing.
 */
export async function recordResult(
  db: Database,
  hostId: string,
  wire: unknown,
  hostKeys: readonly HostVerificationKey[],
  now: Clock = wallClock,
): Promise<RecordedResult> {
  const parsed = hostResultWireSchema.safeParse(wire);
  if (!parsed.success) throw new HostResultRefusedError('result-malformed', firstIssue(parsed.error));
  const row = await readAssignmentByOperation(db, hostId, parsed.data.body.operationId);
  if (row === null) {
    throw new HostResultRefusedError(
      'result-binding-mismatch',
      'no assignment for that operation on the host',
    );
  }
  const verdict = verifyHostResult(parsed.data, hostKeys, {
    hostId,
    operationId: row.operationId,
    envelopeDigest: row.envelopeSha256,
  });
  if (!verdict.ok) throw verdict.error;
  const resultJson = canonicalJson(verdict.result);
  const resultSha256 = sha256Hex(resultJson);
  return db.transaction(async (tx) => {
    const locked = await readAssignmentByOperation(tx, hostId, row.operationId, 'update');
    if (locked === null)
      throw new AssignmentStoreCorruptError(`host ${hostId} sequence ${row.sequence}: gone`);
    if (locked.state === 'Reported') {
      if (locked.resultSha256 === resultSha256) return { sequence: locked.sequence, replayed: true };
      throw new HostResultRefusedError('result-conflict', `sequence ${locked.sequence} has another result`);
    }
    const written = await markReported(
      tx,
      { hostId, sequence: locked.sequence, resultJson, resultSha256 },
      now(),
    );
    if (!written) throw new HostResultRefusedError('result-conflict', `sequence ${locked.sequence} raced`);
    return { sequence: locked.sequence, replayed: false };
  });
}

/** The listener's handlers over PostgreSQL: no state of their own, so a restart loses nothing. */
export function controlHandlersFor(db: Database, now: Clock = wallClock): ControlHandlers {
  return {
    async assignments(hostId, after) {
      return { envelopes: await assignmentsAfter(db, hostId, after) };
    },
    async result(hostId, wire) {
      await recordResult(db, hostId, wire, await loadHostResultKeys(db, hostId), now);
      return { accepted: true };
    },
  };
}
