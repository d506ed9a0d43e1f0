// The sandbox-host provider: the SandboxProvider port mapped onto signed assignments to enrolled
// hosts. Every call issues (or finds) an envelope in the assignment store, then waits for the
// host-signed result that the control listener verified and stored. Invariants:
// - a logical operation has one id per attempt (`provision:<op>#1`, `#2`, …); a stored attempt is
//   answered again, never re-signed, so a retry or a concurrent twin waits on the same envelope,
//   and a new attempt is issued only after the host answered the last one with a signed "no effect"
//   (expired before it was taken, or accepted but never started);
// - a lease's provision attempts stay on the host the first one went to; a new lease goes to an
//   Enrolled host chosen by hashing its operation id;
// - nothing is reported absent that a host did not answer as absent: a host that does not answer by
//   the deadline, a quarantined (uncertain) Environment, or a host that cannot be asked makes the
//   call uncertain, never empty; `listOwned` asks every Enrolled host and fails if one is silent;
// - ownership is checked before any mutation: the resource id names the lease (host, and the
//   SHA-256 of Environment and lease operation), and the host's record must carry the exact owner.
// - a describe reports `configured` only when the host-signed result says, explicitly, that the
//   sandbox's guest reported its configuration complete; any other present sandbox is `started`.
// The hosts run no guest (docs/sandbox-host.md): this provider proves the protocol, not isolation,
// and advertises neither VM isolation, PVC attachment nor an AgentHost.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { sha256Hex } from '../../lib/canonical-json.ts';
import type { Database } from '../../store/db.ts';
import {
  readAttempt,
  readAttempts,
  readEnrolledHostIds,
  readLeaseProvisions,
  readRetiredProvisionHosts,
} from '../../store/sandbox-host-provider.ts';
import { definitive, ownership, ProviderError, uncertain } from '../errors.ts';
import { sameOwner } from '../owner-binding.ts';
import type {
  CallOptions,
  DescribeResult,
  OwnedQuery,
  OwnerBinding,
  ProviderIdentity,
  ProviderOptionsSnapshot,
  ProviderResource,
  ProvisionRequest,
  ReleaseReceipt,
  ReleaseRequest,
  RenewReceipt,
  RenewRequest,
  ResourceRef,
  SandboxProvider,
  UncertainCall,
} from '../provider.ts';
import { AssignmentConflictError, AssignmentStaleFenceError, issueAssignment } from './assignments.ts';
import type { OperationKind } from './envelope-schema.ts';
import type { EnvelopeSigner } from './envelope.ts';
import { EnvelopeSigningError } from './errors.ts';
import {
  sandboxSchema,
  guestSchema,
  ownerOf,
  leaseKey,
  parseResourceId,
  noEffect,
  reissuable,
  resultOf,
  storedOwner,
  failureOf,
  sandboxIn,
  toResource,
  type SandboxRecord,
} from './host-answers.ts';
import { type HostResultBody } from './host-result.ts';

export { leaseKey, parseResourceId } from './host-answers.ts';

export const SANDBOX_HOST_PROVIDER_ID = 'sandbox-host';
export const SANDBOX_HOST_ADAPTER_VERSION = '1.0.0';

export interface SandboxHostProviderOptions {
  db: Database;
  /** The control plane's current envelope-signing key (must be the persisted current trust key). */
  signer: EnvelopeSigner;
  optionsRevision: string;
  /** The longest a host may still take an envelope after issue (default 60 000 ms). */
  envelopeTtlMs?: number;
  /** How often a call re-reads the store for the host's result (default 25 ms). */
  resultPollMs?: number;
  now?: () => Date;
}

/** Only what it proves: results signed by an enrolled host. No VM isolation, PVC or AgentHost. */
export function sandboxHostIdentity(optionsRevision: string): ProviderIdentity {
  return {
    providerId: SANDBOX_HOST_PROVIDER_ID,
    adapterVersion: SANDBOX_HOST_ADAPTER_VERSION,
    optionsSchemaVersion: 1,
    optionsRevision,
    hostingPattern: 'enrolled-host-fleet',
    capabilities: ['host-signed-results'],
  };
}

interface Assignment {
  hostId: string;
  /** The logical operation; attempts are `${base}#n`. */
  base: string;
  kind: OperationKind;
  owner: Pick<OwnerBinding, 'tenantId' | 'projectId' | 'runId' | 'environmentId' | 'operationId'> & {
    resourceGeneration: number;
    providerFence: number;
  };
  spec: Record<string, unknown>;
}

export class SandboxHostProvider implements SandboxProvider {
  readonly identity: ProviderIdentity;
  private readonly db: Database;
  private readonly ttlMs: number;
  private readonly pollMs: number;
  private readonly now: () => Date;
  private readonly lose = new Set<'provision' | 'release'>();

  constructor(private readonly options: SandboxHostProviderOptions) {
    this.identity = sandboxHostIdentity(options.optionsRevision);
    this.db = options.db;
    this.ttlMs = options.envelopeTtlMs ?? 60_000;
    this.pollMs = options.resultPollMs ?? 25;
    this.now = options.now ?? (() => new Date());
  }

  optionsSnapshot(): ProviderOptionsSnapshot {
    return { protocol: 'sandbox.host-control/v1' };
  }

  /**
   * A host runs an envelope only before its expiry and answers each with a signed result. So an
   * uncertain provision is over once its deadline and the longest envelope life have passed (an
   * envelope issued late by a stalled caller expires too) and every provision envelope of its
   * operation holds a host-signed answer that is not itself uncertain: a success (the listing
   * would show it) or a signed no-effect refusal. A silent host proves nothing.
   */
  async callSettled(call: UncertainCall, listedAt: Date): Promise<boolean> {
    if (listedAt.getTime() < call.deadline.getTime() + this.ttlMs) return false;
    const provisions = await this.store(() => readLeaseProvisions(this.db, call.operationId));
    return provisions.every((attempt) => {
      const body = resultOf(attempt);
      return body !== null && body.outcome.status !== 'uncertain';
    });
  }

  /** Test and chaos hook: the next call of `operation` is applied, but its answer is dropped. */
  loseNextResponse(operation: 'provision' | 'release'): void {
    this.lose.add(operation);
  }

  async provision(request: ProvisionRequest, call: CallOptions): Promise<ProviderResource> {
    this.guard(call);
    const owner = ownerOf(request.owner);
    const earlier = await this.store(() => readLeaseProvisions(this.db, owner.operationId));
    for (const attempt of earlier) {
      const stored = storedOwner(attempt);
      if (stored === null || !sameOwner(stored, owner)) {
        throw ownership(
          'operation-owned-elsewhere',
          `operation ${owner.operationId} was provisioned for another owner`,
        );
      }
    }
    const hostId = earlier.at(-1)?.hostId ?? (await this.placeNew(owner.operationId));
    const body = await this.perform(
      {
        hostId,
        base: `provision:${owner.operationId}`,
        kind: 'provision',
        owner,
        spec: {
          owner,
          workspace: { ...request.workspace },
          networkPolicyGeneration: request.networkPolicyGeneration,
          expiresAt: request.expiresAt ?? null,
          options: { ...request.options },
        },
      },
      call,
    );
    this.dropIfLost('provision');
    const failure = failureOf(body);
    if (failure === 'owner-mismatch') {
      throw ownership('owner-mismatch', `host ${hostId} holds lease ${owner.operationId} for another owner`);
    }
    if (failure !== null)
      throw definitive(`host-${failure}`, `host ${hostId} refused the provision (${failure})`);
    const sandbox = sandboxIn(body, 'sandbox');
    if (sandbox === null || !sameOwner(sandbox.owner, owner)) {
      throw ownership('owner-mismatch', `host ${hostId} answered a sandbox of another owner`);
    }
    return toResource(hostId, sandbox);
  }

  async describe(ref: ResourceRef, call: CallOptions): Promise<DescribeResult> {
    this.guard(call);
    const { hostId } = this.locate(ref);
    const described = await this.read(hostId, ref.owner, call);
    if (described === null) return { present: false };
    if (!sameOwner(described.sandbox.owner, ref.owner)) {
      throw ownership('owner-mismatch', `resource ${ref.resourceId} belongs to another owner binding`);
    }
    return { present: true, resource: toResource(hostId, described.sandbox, described.phase) };
  }

  async listOwned(query: OwnedQuery, call: CallOptions): Promise<ProviderResource[]> {
    this.guard(call);
    const hosts = await this.store(() => readEnrolledHostIds(this.db));
    // A host retired after it was sent one of this owner's provisions is not asked, so the listing
    // cannot be exact: uncertain, never a shorter list.
    const unseen = await this.store(() => readRetiredProvisionHosts(this.db, query.owner.ownerHash));
    if (unseen.length > 0) {
      throw uncertain('host-retired', `host ${unseen.join(', ')} is no longer enrolled and cannot be listed`);
    }
    const spec: Record<string, unknown> = {
      ownerHash: query.owner.ownerHash,
      providerFence: query.owner.providerFence,
      ...(query.owner.operationId === undefined ? {} : { operationId: query.owner.operationId }),
    };
    const answers = await Promise.all(
      hosts.map(async (hostId) => {
        const body = await this.perform(
          {
            hostId,
            base: `list:${randomUUID()}`,
            kind: 'listOwned',
            owner: {
              tenantId: 'sandlot',
              projectId: 'sandlot',
              runId: 'list-owned',
              environmentId: `owned:${query.owner.ownerHash}`,
              operationId: query.owner.operationId ?? 'any',
              resourceGeneration: 1,
              providerFence: query.owner.providerFence,
            },
            spec,
          },
          call,
        );
        return { hostId, body };
      }),
    );
    const found: ProviderResource[] = [];
    for (const { hostId, body } of answers) {
      const failure = failureOf(body);
      if (failure !== null) throw uncertain(`host-${failure}`, `host ${hostId} could not list (${failure})`);
      const listing = z
        .object({
          sandboxes: z.array(sandboxSchema),
          uncertain: z.array(z.object({ environmentId: z.string(), operationId: z.string() })).default([]),
        })
        .safeParse(body.outcome.document);
      if (!listing.success)
        throw uncertain('host-answer-invalid', `host ${hostId} answered an unreadable listing`);
      await this.refuseQuarantined(hostId, listing.data.uncertain, query);
      for (const sandbox of listing.data.sandboxes) {
        const { owner } = sandbox;
        const matches =
          owner.ownerHash === query.owner.ownerHash &&
          owner.providerFence === query.owner.providerFence &&
          (query.owner.operationId === undefined || owner.operationId === query.owner.operationId);
        if (matches) found.push(toResource(hostId, sandbox));
      }
    }
    return found.sort((a, b) => (a.resourceId < b.resourceId ? -1 : a.resourceId > b.resourceId ? 1 : 0));
  }

  async renew(request: RenewRequest, call: CallOptions): Promise<RenewReceipt> {
    this.guard(call);
    const { hostId } = this.locate(request);
    const current = (await this.read(hostId, request.owner, call))?.sandbox ?? null;
    if (current === null) throw definitive('resource-absent', `resource ${request.resourceId} is gone`);
    if (!sameOwner(current.owner, request.owner)) {
      throw ownership('owner-mismatch', `resource ${request.resourceId} belongs to another owner binding`);
    }
    const body = await this.perform(
      {
        hostId,
        base: `renew:${request.owner.operationId}:${request.expiresAt}`,
        kind: 'renew',
        owner: ownerOf(request.owner),
        spec: { expiresAt: request.expiresAt },
      },
      call,
    );
    const failure = failureOf(body);
    if (failure === 'absent') throw definitive('resource-absent', `resource ${request.resourceId} is gone`);
    if (failure !== null)
      throw definitive(`host-${failure}`, `host ${hostId} refused the renewal (${failure})`);
    return { resourceId: request.resourceId, expiresAt: request.expiresAt };
  }

  async release(request: ReleaseRequest, call: CallOptions): Promise<ReleaseReceipt> {
    this.guard(call);
    const { hostId } = this.locate(request);
    const receipt: ReleaseReceipt = {
      outcome: 'KnownOwnedAbsent',
      resourceId: request.resourceId,
      idempotencyKey: request.idempotencyKey,
    };
    const current = (await this.read(hostId, request.owner, call))?.sandbox ?? null;
    if (current !== null && !sameOwner(current.owner, request.owner)) {
      throw ownership('owner-mismatch', `resource ${request.resourceId} belongs to another owner binding`);
    }
    if (current === null) return receipt;
    const body = await this.perform(
      {
        hostId,
        base: `release:${request.owner.operationId}:${sha256Hex(request.idempotencyKey).slice(0, 32)}`,
        kind: 'release',
        owner: ownerOf(request.owner),
        spec: {},
      },
      call,
    );
    this.dropIfLost('release');
    const failure = failureOf(body);
    if (failure !== null) throw uncertain(`host-${failure}`, `host ${hostId} could not release (${failure})`);
    return receipt;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  // ---- inside ----

  private guard(call: CallOptions): void {
    if (call.signal.aborted) throw uncertain('aborted', 'the call was cancelled before it was sent');
    if (call.deadline.getTime() <= Date.now())
      throw uncertain('deadline-exceeded', 'the deadline has passed');
  }

  private dropIfLost(operation: 'provision' | 'release'): void {
    if (this.lose.delete(operation)) {
      throw uncertain('response-lost', `the ${operation} was applied but its answer was lost`);
    }
  }

  /** The resource's host, after checking that the resource id names the caller's own lease. */
  private locate(ref: ResourceRef): { hostId: string } {
    const parsed = parseResourceId(ref.resourceId);
    if (parsed === null) throw definitive('resource-id-invalid', 'not a sandbox-host resource id');
    if (parsed.key !== leaseKey(ref.owner)) {
      throw ownership('owner-mismatch', `resource ${ref.resourceId} is not this owner's lease`);
    }
    return { hostId: parsed.hostId };
  }

  /**
   * An exact, host-answered describe: the record and the phase its guest is in (`configured` only
   * when the signed result says so), or null when the host answered it absent.
   */
  private async read(
    hostId: string,
    owner: OwnerBinding,
    call: CallOptions,
  ): Promise<{ sandbox: SandboxRecord; phase: 'started' | 'configured' } | null> {
    const body = await this.perform(
      { hostId, base: `describe:${randomUUID()}`, kind: 'describe', owner: ownerOf(owner), spec: {} },
      call,
    );
    const failure = failureOf(body);
    if (failure !== null)
      throw uncertain(`host-${failure}`, `host ${hostId} could not describe (${failure})`);
    const answer = z
      .object({ found: z.boolean(), guest: guestSchema.optional() })
      .safeParse(body.outcome.document);
    if (!answer.success)
      throw uncertain('host-answer-invalid', `host ${hostId} answered an unreadable describe`);
    if (!answer.data.found) return null;
    const sandbox = sandboxIn(body, 'sandbox');
    if (sandbox === null)
      throw uncertain('host-answer-invalid', `host ${hostId} answered an unreadable sandbox`);
    return { sandbox, phase: answer.data.guest?.phase ?? 'started' };
  }

  /** An Enrolled host for a new lease, by the hash of its operation id. */
  private async placeNew(operationId: string): Promise<string> {
    const hosts = await this.store(() => readEnrolledHostIds(this.db));
    if (hosts.length === 0) throw definitive('no-enrolled-host', 'no sandbox host is enrolled');
    const index = Number.parseInt(sha256Hex(operationId).slice(0, 8), 16) % hosts.length;
    return hosts[index] as string;
  }

  /**
   * A quarantined operation of this owner's lease on the host makes the listing uncertain; so does
   * one the store cannot trace to a lease. Quarantined listings (placeholder Environments) are not.
   */
  private async refuseQuarantined(
    hostId: string,
    held: readonly { environmentId: string; operationId: string }[],
    query: OwnedQuery,
  ): Promise<void> {
    for (const quarantine of held) {
      if (quarantine.environmentId.startsWith('owned:')) continue;
      const attempt = await this.store(() => readAttempt(this.db, hostId, quarantine.operationId));
      const leaseOperation = z
        .object({ body: z.object({ lease: z.object({ operationId: z.string() }) }) })
        .safeParse(attempt?.envelope);
      const provisions = leaseOperation.success
        ? await this.store(() => readLeaseProvisions(this.db, leaseOperation.data.body.lease.operationId))
        : [];
      const traced = provisions.length > 0;
      if (!traced || provisions.some((p) => storedOwner(p)?.ownerHash === query.owner.ownerHash)) {
        throw uncertain(
          'host-quarantined',
          `host ${hostId} holds an uncertain operation until an operator confirms its cleanup`,
        );
      }
    }
  }

  /**
   * Issues (or finds) the current attempt of an operation and waits for the host's verified result.
   * An attempt the host answered with "no effect" is followed by a new one while time remains.
   */
  private async perform(assignment: Assignment, call: CallOptions): Promise<HostResultBody> {
    for (;;) {
      const attempts = await this.store(() =>
        readAttempts(this.db, assignment.hostId, `${assignment.base}#`),
      );
      const latest = attempts.at(-1);
      const settled = latest === undefined ? null : resultOf(latest);
      let operationId: string;
      if (latest !== undefined && settled === null) {
        operationId = latest.operationId;
      } else if (settled !== null && !reissuable(settled)) {
        return settled;
      } else {
        operationId = `${assignment.base}#${attempts.length + 1}`;
        await this.issue(assignment, operationId, call);
      }
      const body = await this.awaitResult(assignment.hostId, operationId, call);
      if (!noEffect(body)) return body;
      this.guard(call);
    }
  }

  private async issue(assignment: Assignment, operationId: string, call: CallOptions): Promise<void> {
    const { owner } = assignment;
    const remaining = call.deadline.getTime() - Date.now();
    try {
      await issueAssignment(
        this.db,
        this.options.signer,
        {
          hostId: assignment.hostId,
          tenantId: owner.tenantId,
          principal: { subject: `run:${owner.tenantId}/${owner.projectId}/${owner.runId}` },
          operation: { id: operationId, kind: assignment.kind },
          lease: {
            environmentId: owner.environmentId,
            operationId: owner.operationId,
            resourceGeneration: owner.resourceGeneration,
          },
          fence: { providerFence: owner.providerFence },
          spec: assignment.spec,
          capabilities: { capabilities: [...this.identity.capabilities] },
          ttlMs: Math.min(this.ttlMs, Math.max(1_000, remaining)),
        },
        this.now,
      );
    } catch (error) {
      if (error instanceof AssignmentConflictError) {
        throw ownership('assignment-conflict', `operation ${operationId} was issued with another binding`);
      }
      if (error instanceof AssignmentStaleFenceError) {
        throw definitive('stale-fence', `a newer fence was issued for Environment ${owner.environmentId}`);
      }
      if (error instanceof EnvelopeSigningError) {
        throw definitive(
          'signing-key-not-current',
          'the configured envelope-signing key is not the current trust key',
        );
      }
      throw uncertain(
        'issue-failed',
        `the assignment to host ${assignment.hostId} could not be issued`,
        error,
      );
    }
  }

  private async awaitResult(hostId: string, operationId: string, call: CallOptions): Promise<HostResultBody> {
    for (;;) {
      const row = await this.store(() => readAttempt(this.db, hostId, operationId));
      const body = row === null ? null : resultOf(row);
      if (body !== null) return body;
      if (call.signal.aborted) throw uncertain('aborted', `cancelled while host ${hostId} was working`);
      const left = call.deadline.getTime() - Date.now();
      if (left <= 0) throw uncertain('host-unanswered', `host ${hostId} did not answer before the deadline`);
      try {
        await sleep(Math.min(this.pollMs, left), undefined, { signal: call.signal });
      } catch {
        throw uncertain('aborted', `cancelled while host ${hostId} was working`);
      }
    }
  }

  /** A store failure is uncertain: the call may or may not have been issued. */
  private async store<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('store-unavailable', 'the assignment store could not be read', error);
    }
  }
}
