// An in-process SandboxProvider for the embedded mode, tests, chaos runs and benchmarks. Resources
// live in simulated_resources, so they outlive the process like real ones. One resource per
// operation: the resource ID is derived from the operation ID and the insert is ON CONFLICT DO
// NOTHING, so a retried or concurrent provision adopts the existing resource instead of a second.
import { createHash } from 'node:crypto';
import type { Database } from '../../store/db.ts';
import {
  countSimulatedResources,
  findSimulatedResource,
  findSimulatedResourceByOperation,
  insertSimulatedResource,
  listSimulatedResources,
  markSimulatedResourceDeleted,
  renewSimulatedResource,
  type SimulatedResourceFilter,
  type SimulatedResourceRow,
} from '../../store/simulated-resources.ts';
import { insertSimulatedCall, type SimulatedCall } from '../../store/simulated-calls.ts';
import { callBudget } from '../call-budget.ts';
import { definitive, ProviderError, uncertain } from '../errors.ts';
import type {
  CallOptions,
  DescribeResult,
  InventoryEntry,
  OwnedQuery,
  OwnerBinding,
  ProviderIdentity,
  ProviderChangeFeed,
  ProviderInventory,
  ProviderOptionsSnapshot,
  ProviderPhase,
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
import { FaultInjector, type FaultDecision, type InjectedFault } from './fault-injector.ts';
import type { FaultPlan, ProviderOperation } from './fault-plan.ts';
import { simulatedIdentity } from './identity.ts';
import { defaultChangeFeed, followSimulatedChanges, type ChangeFeedSettings } from './change-feed.ts';
import { pickOwner } from '../owner-binding.ts';
import { assertOwnedBy, validateOwner } from './owner-check.ts';

export interface SimulatedProviderOptions {
  db: Database;
  optionsRevision: string;
  faults?: FaultPlan;
  /** Seeds the fault plan's random draws; default 1. */
  seed?: number;
  /** Both measured from creation; defaults 20 and 50. */
  phaseDelaysMs?: { imageReady: number; started: number };
  /** The clock resources age by (phases); call deadlines use real time. */
  now?: () => number;
  /** The change feed's read period and settle window (providers/simulated/change-feed.ts). */
  changeFeed?: Partial<ChangeFeedSettings>;
  /** Test hook: placement keys merged into each resource's (e.g. an AgentHost `podIP`/`serviceDns`). */
  placementFor?: (resourceId: string) => Record<string, string>;
}

/** How long a late resource's store write may take after its delay (part of the in-flight window). */
const SIMULATED_STORE_MARGIN_MS = 1_000;

// Call deadlines are wall-clock; the injected `now` only ages resources.
const budget = callBudget('Simulated');

/** `sim-` + the first 20 hex digits of sha256(operationId): stable across retries and restarts. */
export function simulatedResourceId(operationId: string): string {
  return `sim-${createHash('sha256').update(operationId).digest('hex').slice(0, 20)}`;
}

export class SimulatedProvider implements SandboxProvider, ProviderInventory, ProviderChangeFeed {
  readonly identity: ProviderIdentity;
  private readonly db: Database;
  private readonly now: () => number;
  private readonly delays: { imageReady: number; started: number };
  private readonly faults: FaultInjector;
  private readonly pendingWrites = new Set<Promise<void>>();
  private readonly placementFor: SimulatedProviderOptions['placementFor'];
  private readonly changeFeed: ChangeFeedSettings;

  constructor(options: SimulatedProviderOptions) {
    this.identity = simulatedIdentity(options.optionsRevision);
    this.db = options.db;
    this.now = options.now ?? Date.now;
    this.delays = options.phaseDelaysMs ?? { imageReady: 20, started: 50 };
    this.faults = new FaultInjector(options.faults ?? {}, options.seed ?? 1);
    this.placementFor = options.placementFor;
    this.changeFeed = { ...defaultChangeFeed, ...options.changeFeed };
  }

  followChanges(
    onChange: (resourceIds: string[]) => void,
    options: { signal: AbortSignal; onError?: (error: unknown) => void },
  ): Promise<void> {
    return followSimulatedChanges(this.db, this.changeFeed, onChange, options);
  }

  optionsSnapshot(): ProviderOptionsSnapshot {
    return { optionsRevision: this.identity.optionsRevision, namespace: 'simulated' };
  }

  /** Makes the next call of `operation` suffer `fault`, ahead of the plan (tests' lever). */
  injectFault(operation: ProviderOperation, fault: InjectedFault, ms?: number): void {
    this.faults.inject(operation, fault, ms);
  }

  provision(request: ProvisionRequest, options: CallOptions): Promise<ProviderResource> {
    return this.call('provision', loggedOf(request.owner), options, async (decision) => {
      validateOwner(request.owner);
      const expiresAt = request.expiresAt ?? null;
      if (expiresAt !== null) instantMs(expiresAt, 'expiresAt');
      if (decision.fault === 'late-resource') {
        this.later(decision.lateMs, () => this.insert(request));
        throw budget.timedOut('provision', options.deadline);
      }
      const resource = await this.create(request);
      if (decision.fault === 'duplicate-resource') {
        // A stray: same owner hash and fence, another operation. Only listOwned can find it.
        // Written blind, so the stray never changes what this call reports.
        const operationId = `${request.owner.operationId}/stray`;
        await this.insert({ ...request, owner: { ...request.owner, operationId } });
      }
      return resource;
    });
  }

  describe(ref: ResourceRef, options: CallOptions): Promise<DescribeResult> {
    return this.call('describe', loggedOf(ref.owner), options, async () => {
      const row = await findSimulatedResource(this.db, ref.resourceId);
      if (row === null || row.deleted) return { present: false };
      assertOwnedBy(row.owner, ref.owner, ref.resourceId);
      return { present: true, resource: this.toResource(row) };
    });
  }

  listOwned(query: OwnedQuery, options: CallOptions): Promise<ProviderResource[]> {
    return this.call('listOwned', loggedOf(query.owner), options, async () => {
      const filter: SimulatedResourceFilter = {
        ownerHash: query.owner.ownerHash,
        providerFence: query.owner.providerFence,
      };
      if (query.owner.operationId !== undefined) filter.operationId = query.owner.operationId;
      const rows = await listSimulatedResources(this.db, filter);
      return rows.map((row) => this.toResource(row));
    });
  }

  /** Moves the recorded term only; like the cluster's backstop, it never releases anything itself. */
  renew(request: RenewRequest, options: CallOptions): Promise<RenewReceipt> {
    return this.call('renew', loggedOf(request.owner), options, async () => {
      const expiresAtMs = instantMs(request.expiresAt, 'expiresAt');
      const row = await findSimulatedResource(this.db, request.resourceId);
      if (row === null || row.deleted) throw absent(request.resourceId);
      assertOwnedBy(row.owner, request.owner, request.resourceId);
      // The update re-checks liveness: a release in between leaves nothing to renew.
      if (!(await renewSimulatedResource(this.db, request.resourceId, expiresAtMs))) {
        throw absent(request.resourceId);
      }
      return { resourceId: request.resourceId, expiresAt: request.expiresAt };
    });
  }

  release(request: ReleaseRequest, options: CallOptions): Promise<ReleaseReceipt> {
    return this.call('release', loggedOf(request.owner), options, async () => {
      const row = await findSimulatedResource(this.db, request.resourceId);
      if (row !== null && !row.deleted) {
        assertOwnedBy(row.owner, request.owner, request.resourceId);
        await markSimulatedResourceDeleted(this.db, request.resourceId, Math.round(this.now()));
      }
      // The receipt is proof of absence, so it rests on a fresh exact lookup, not on the update.
      const after = await findSimulatedResource(this.db, request.resourceId);
      if (after !== null && !after.deleted) {
        throw uncertain('still-present', `Simulated resource ${request.resourceId} is still present`);
      }
      return {
        outcome: 'KnownOwnedAbsent',
        resourceId: request.resourceId,
        idempotencyKey: request.idempotencyKey,
      };
    });
  }

  /**
   * Every live resource in the table, whoever owns it (`sandlot audit`'s orphan check). Not a
   * provider call on anyone's behalf: it is neither logged nor subject to faults.
   */
  async inventory(options: CallOptions): Promise<InventoryEntry[]> {
    budget.check(options, 'listOwned');
    const rows = await listSimulatedResources(this.db, {});
    return rows.map((row) => ({ resourceId: row.resourceId, owner: pickOwner(row.owner) }));
  }

  /** Test helper: how many resources match (live ones only unless includeDeleted). */
  countResources(filter: SimulatedResourceFilter = {}): Promise<number> {
    return countSimulatedResources(this.db, filter);
  }

  /** Test helper: the term recorded for a resource (ISO instant), null for none or no such resource. */
  async recordedExpiry(resourceId: string): Promise<string | null> {
    const row = await findSimulatedResource(this.db, resourceId);
    return row === null || row.expiresAtMs === null ? null : new Date(row.expiresAtMs).toISOString();
  }

  /**
   * The simulated provider's in-flight window: a call's effects land before it answers, except a
   * late resource, which its fault plan delays by at most `maxLateMs` from the call (always before
   * the call's deadline), plus a second for its store write. Past that, the call can no longer land.
   */
  callSettled(call: UncertainCall, listedAt: Date): Promise<boolean> {
    const window = this.faults.maxLateMs() + SIMULATED_STORE_MARGIN_MS;
    return Promise.resolve(listedAt.getTime() >= call.deadline.getTime() + window);
  }

  /** Waits for late resources still to be written, so none is lost when the process stops. */
  async close(): Promise<void> {
    while (this.pendingWrites.size > 0) await Promise.allSettled([...this.pendingWrites]);
  }

  /** Budget, latency and the decided fault wrapped around one operation's effect. */
  private async call<T>(
    operation: ProviderOperation,
    logged: Omit<SimulatedCall, 'operation'>,
    options: CallOptions,
    apply: (decision: FaultDecision) => Promise<T>,
  ): Promise<T> {
    const decision = this.faults.next(operation);
    budget.check(options, operation);
    // The call log (`sandlot audit`): written as the call reaches the provider, before any effect.
    try {
      await insertSimulatedCall(this.db, { operation, ...logged });
    } catch (error) {
      throw uncertain('storage-error', `Simulated ${operation} could not log the call`, error);
    }
    await budget.sleep(decision.latencyMs, options, operation);
    if (decision.fault === 'server-error') {
      throw uncertain('server-error', `Simulated ${operation} answered 503 Service Unavailable`);
    }
    let result: T;
    try {
      result = await apply(decision);
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('storage-error', `Simulated ${operation} failed in its store`, error);
    }
    if (decision.fault === 'timeout-after-apply') {
      await budget.sleep(Number.POSITIVE_INFINITY, options, operation);
      throw budget.timedOut(operation, options.deadline);
    }
    if (decision.fault === 'lost-response') {
      throw uncertain('connection-reset', `Simulated ${operation}: connection reset before the response`);
    }
    // An answer that arrives after the caller gave up is not one it can rely on.
    budget.check(options, operation);
    return result;
  }

  /** Inserts unless the operation already has a resource (of whatever owner). */
  private async insert(request: ProvisionRequest): Promise<void> {
    const owner = pickOwner(request.owner);
    const expiresAt = request.expiresAt ?? null;
    await insertSimulatedResource(this.db, {
      resourceId: simulatedResourceId(owner.operationId),
      owner,
      workspace: request.workspace,
      networkPolicyGeneration: request.networkPolicyGeneration,
      options: request.options,
      createdAtMs: Math.round(this.now()),
      expiresAtMs: expiresAt === null ? null : instantMs(expiresAt, 'expiresAt'),
    });
  }

  /** Inserts or adopts the operation's resource, which must be ours and not yet released. */
  private async create(request: ProvisionRequest): Promise<ProviderResource> {
    const owner = pickOwner(request.owner);
    await this.insert(request);
    const stored = await findSimulatedResourceByOperation(this.db, owner.operationId);
    if (stored === null) throw uncertain('not-found-after-create', `Simulated ${owner.operationId} vanished`);
    assertOwnedBy(stored.owner, owner, stored.resourceId);
    if (stored.deleted) {
      throw definitive(
        'operation-released',
        `Operation ${owner.operationId} was released; it is never revived`,
      );
    }
    return this.toResource(stored);
  }

  private later(ms: number, write: () => Promise<unknown>): void {
    const done = new Promise<void>((resolve) => {
      setTimeout(() => {
        // A late write that fails (store closed under it) is a resource that never appeared.
        write().then(
          () => resolve(),
          () => resolve(),
        );
      }, ms);
    });
    this.pendingWrites.add(done);
    void done.then(() => this.pendingWrites.delete(done));
  }

  private toResource(row: SimulatedResourceRow): ProviderResource {
    const resource: ProviderResource = {
      resourceId: row.resourceId,
      owner: pickOwner(row.owner),
      phase: phaseAt(this.now() - row.createdAtMs, this.delays),
      placement: {
        node: 'sim-node-1',
        endpoint: `https://${row.resourceId}.sim.invalid`,
        ...this.placementFor?.(row.resourceId),
      },
    };
    if (row.finished !== null) resource.finished = row.finished;
    return resource;
  }
}

/** What the call log keeps of a call's owner: the operation (when named), owner hash and fence. */
function loggedOf(
  owner: Pick<OwnerBinding, 'ownerHash' | 'providerFence'> & { operationId?: string },
): Omit<SimulatedCall, 'operation'> {
  return {
    operationId: typeof owner.operationId === 'string' ? owner.operationId : null,
    ownerHash: typeof owner.ownerHash === 'string' ? owner.ownerHash : null,
    providerFence: Number.isSafeInteger(owner.providerFence) ? owner.providerFence : null,
  };
}

/** Epoch milliseconds of an ISO instant; anything else is refused before anything is applied. */
function instantMs(value: unknown, what: string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw definitive('invalid-request', `${what} must be an ISO instant`);
  return ms;
}

const absent = (resourceId: string) =>
  definitive('resource-absent', `Simulated resource ${resourceId} is absent or released; nothing to renew`);

function phaseAt(elapsedMs: number, delays: { imageReady: number; started: number }): ProviderPhase {
  if (elapsedMs >= delays.started) return 'started';
  if (elapsedMs >= delays.imageReady) return 'image-ready';
  return 'scheduled';
}
