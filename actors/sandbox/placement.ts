// The v1 placement reads: the owner-local projection of the exact current, Active, unexpired lease.
// One transaction holds the Environment's owner lock across the whole read: the lease read inside
// it must equal the first read, the authority callback runs (fresh WriteProjects for the public
// route; fresh ReadRunSelection and the token's exact run binding for the internal one), and the
// lease read again must still equal it before anything is returned. Any difference, or a callback
// that throws, returns nothing. No run selection is read and no provider is contacted; a
// successful read authorizes nothing later (configure and provider effects recheck on their own).
import type { Database, Queryable } from '../../store/db.ts';
import { lockEnvironment, readEnvironment, type EnvironmentRow } from '../../store/environments.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import { PlacementRefusedError, RunBindingError } from '../errors.ts';
import { Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import { placementProjectionSchema, providerPinSchema, type PlacementProjection } from './placement-view.ts';
import type { Caller, Permission } from '../ports.ts';
import { isExpired } from './readiness.ts';

export type PlacementRoute = 'public' | 'internal';

/** A caller as the HTTP layer knows it: a run-bound token carries its exact project and run. */
export interface PlacementCaller extends Caller {
  runBinding?: { projectId: string; runId: string };
}

const required: Record<PlacementRoute, readonly Permission[]> = {
  public: ['WriteProjects'],
  internal: ['ReadRunSelection'],
};

/** Every field that makes a lease snapshot the same one: fences, operation, revision, state, expiry, stamp. */
function sameSnapshot(a: LeaseRow, b: LeaseRow | null): boolean {
  return (
    b !== null &&
    a.environmentId === b.environmentId &&
    a.lifecycleGeneration === b.lifecycleGeneration &&
    a.resourceGeneration === b.resourceGeneration &&
    a.operationId === b.operationId &&
    a.revision === b.revision &&
    a.providerFence === b.providerFence &&
    a.currentFencingGeneration === b.currentFencingGeneration &&
    a.state === b.state &&
    a.expiresAt?.getTime() === b.expiresAt?.getTime() &&
    a.expiredAt?.getTime() === b.expiredAt?.getTime() &&
    a.updatedAt.getTime() === b.updatedAt.getTime()
  );
}

const changed = () =>
  new PlacementRefusedError(
    'placement-changed',
    'the lease changed while its placement was being read; nothing was returned, ask again',
  );

export class PlacementService {
  constructor(private readonly deps: AuthorityDeps & { db: Database }) {}

  /** The projection, or null when the Environment has no placement (no current lease or resource). */
  async read(
    caller: PlacementCaller,
    address: EnvironmentAddress,
    route: PlacementRoute,
  ): Promise<PlacementProjection | null> {
    if (route === 'internal') requireRunBinding(caller, address);
    const guard = new Guard(this.deps, caller, address.projectId, required[route]);
    const env = await guard.environment(address);
    const first = await readCurrentLease(this.deps.db, env.environmentId);
    if (first === null || first.resource === null) return null;
    refuseUnusable(first, new Date());
    return this.deps.db.transaction(async (tx) => {
      await lockEnvironment(tx, env.environmentId);
      const owner = await readEnvironment(tx, env.environmentId);
      const held = await readCurrentLease(tx, env.environmentId);
      // The retained snapshot must still be the first one before the final authorization.
      if (
        owner === null ||
        owner.lifecycleGeneration !== first.lifecycleGeneration ||
        !sameSnapshot(first, held)
      ) {
        throw changed();
      }
      await this.#callback(guard, tx);
      const again = await readCurrentLease(tx, env.environmentId);
      if (!sameSnapshot(first, again)) throw changed();
      refuseUnusable(first, new Date());
      return projectionOf(owner, first);
    });
  }

  /** The authority callback: bounded, owner-scoped, no provider effect, no read of this lease's routes. */
  async #callback(guard: Guard, tx: Queryable): Promise<void> {
    await guard.check(tx);
  }
}

function requireRunBinding(caller: PlacementCaller, address: EnvironmentAddress): void {
  const binding = caller.runBinding;
  if (binding === undefined) {
    throw new RunBindingError('this route needs a run-bound token (claims project and run)');
  }
  if (binding.projectId !== address.projectId || binding.runId !== address.runId) {
    throw new RunBindingError('the token is bound to another project or run');
  }
}

function refuseUnusable(lease: LeaseRow, now: Date): void {
  if (lease.state !== 'Active') {
    throw new PlacementRefusedError(
      'placement-not-active',
      `the current lease is ${lease.state}, not Active`,
    );
  }
  if (isExpired(lease, now)) {
    throw new PlacementRefusedError(
      'lease-expired',
      'the current lease expired; it has no placement to project',
    );
  }
}

function projectionOf(owner: EnvironmentRow, lease: LeaseRow): PlacementProjection {
  const resource = lease.resource;
  if (resource === null) throw changed();
  const identity = lease.providerIdentity;
  return placementProjectionSchema.parse({
    version: 'v1',
    tenantId: owner.tenantId,
    projectId: owner.projectId,
    runId: owner.runId,
    environmentId: owner.environmentId,
    lifecycleGeneration: lease.lifecycleGeneration,
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    currentFencingGeneration: lease.currentFencingGeneration,
    lease: {
      revision: lease.revision,
      state: 'Active',
      current: true,
      expiresAt: lease.expiresAt?.toISOString() ?? null,
      updatedAt: lease.updatedAt.toISOString(),
    },
    resource: {
      resourceId: resource.resourceId,
      endpoint: resource.placement['endpoint'] ?? null,
      placement: resource.placement,
    },
    providerPin: providerPinSchema.parse({
      providerId: identity['providerId'],
      adapterVersion: identity['adapterVersion'],
      optionsSchemaVersion: identity['optionsSchemaVersion'],
      optionsRevision: identity['optionsRevision'],
      resourceId: resource.resourceId,
      resourceGeneration: lease.resourceGeneration,
      capabilities: identity['capabilities'],
    }),
  });
}
