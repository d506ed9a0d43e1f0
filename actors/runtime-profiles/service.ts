// Runtime-bootstrap profile mappings: the owner side of "resolve a source profile for the current
// sandbox". Resolve reads the current run-authorized placement (the internal placement read: a
// run-bound token and fresh ReadRunSelection, under the owner lock), requires the owner Registered
// and its accepted selection unchanged, takes the AgentHost HTTPS endpoint the placement records,
// checks the configure URL and audience from the immutable AgentHost configuration, probes
// `/health/live` on a fresh connection, and only then stores the mapping: in one transaction under
// the owner lock, after the lease, fences, endpoint, authority and selection are read again. The
// row is inserted once and compared on every later resolve and read; nothing is ever overwritten.
// No provider is called, no credential is read or returned.
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { Database, Queryable } from '../../store/db.ts';
import { lockEnvironment, readEnvironment, type EnvironmentRow } from '../../store/environments.ts';
import { readCurrentLease } from '../../store/leases.ts';
import {
  insertProfileMapping,
  readProfileMapping,
  type NewProfileMapping,
  type ProfileMappingRow,
} from '../../store/runtime-profiles.ts';
import { RunSelectionChangedError } from '../errors.ts';
import { Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { PlacementCaller, PlacementService } from '../sandbox/placement.ts';
import type { PlacementProjection } from '../sandbox/placement-view.ts';
import type { AgentHost, AgentHostEndpoint } from '../ports.ts';
import { configureUrlOf, endpointOfPlacement, mappingFor, receiverEndpointOf, stalePart } from './copy.ts';
import {
  EnvironmentNotActiveError,
  RuntimeEndpointNotLiveError,
  RuntimeEndpointUnavailableError,
  RuntimeProfileActorError,
  RuntimeProfileConflictError,
  RuntimeProfileNotFoundError,
  RuntimeProfileStaleError,
  RuntimeProfilesUnavailableError,
} from './errors.ts';
import { mappingOwnedBy } from './current.ts';
import { RuntimeWorkspaceContextReader, type RuntimeWorkspaceContext } from './workspace-context.ts';
import { isExpired } from '../sandbox/readiness.ts';

export interface RuntimeProfileDeps extends AuthorityDeps {
  db: Database;
  placement: PlacementService;
  agentHost: AgentHost;
  /** Absent: no AgentHost configuration was given, and resolve answers 409. */
  configuration?: AgentHostConfiguration;
}

export interface ResolvedProfile {
  mapping: ProfileMappingRow;
  /** True when the mapping already existed (the same placement resolved before). */
  replayed: boolean;
}

/** What a mapping needs from the current state, read once per request. */
interface Current {
  owner: EnvironmentRow;
  projection: PlacementProjection;
  endpoint: AgentHostEndpoint;
}

export class RuntimeProfileService {
  constructor(private readonly deps: RuntimeProfileDeps) {}

  async resolve(
    caller: PlacementCaller,
    address: EnvironmentAddress,
    sourceProfileId: string,
    signal: AbortSignal,
  ): Promise<ResolvedProfile> {
    const guard = this.#guard(caller, address);
    const projection = await this.deps.placement.read(caller, address, 'internal');
    const configuration = this.#configuration();
    sourceOf(configuration, sourceProfileId); // an unknown source profile is 404 before anything else
    if (projection === null) {
      throw new RuntimeEndpointUnavailableError('no-placement', 'the Environment has no current placement');
    }
    const current = await this.#current(guard, address, projection);
    const expected = this.#expected(caller, configuration, sourceProfileId, current);
    const existing = await readProfileMapping(this.deps.db, expected.profileId);
    if (existing !== null) refuseDiffering(existing, expected);

    // The probe precedes any write: a Host that is not live leaves nothing behind.
    const verdict = await this.deps.agentHost.probeLive(current.endpoint, signal);
    if (!verdict.live) throw new RuntimeEndpointNotLiveError(verdict.code);

    return this.deps.db.transaction(async (tx) => {
      await lockEnvironment(tx, projection.environmentId);
      await this.#recheck(tx, guard, current);
      const inserted = await insertProfileMapping(tx, expected);
      const stored = await readProfileMapping(tx, expected.profileId);
      if (stored === null) throw new RuntimeProfileConflictError('row');
      refuseDiffering(stored, expected);
      return { mapping: stored, replayed: !inserted };
    });
  }

  /** The stored mapping, only while actor, selection, source configuration and endpoint still match. */
  async read(
    caller: PlacementCaller,
    address: EnvironmentAddress,
    profileId: string,
  ): Promise<ProfileMappingRow> {
    const guard = this.#guard(caller, address);
    const projection = await this.deps.placement.read(caller, address, 'internal');
    const stored = await readProfileMapping(this.deps.db, profileId);
    if (stored === null || !mappingOwnedBy(stored, { tenantId: caller.tenantId, ...address })) {
      throw new RuntimeProfileNotFoundError('mapping', profileId);
    }
    if (stored.actor !== caller.subject) throw new RuntimeProfileActorError();
    const configuration = this.#configuration();
    if (!Object.hasOwn(configuration.profiles, stored.sourceProfileId)) {
      throw new RuntimeProfileStaleError('source-configuration');
    }
    if (projection === null) throw new RuntimeProfileStaleError('no-placement');
    const current = await this.#current(guard, address, projection, (reason) => {
      throw new RuntimeProfileStaleError(reason === 'selection' ? 'selection' : 'endpoint');
    });
    const part = stalePart(stored, this.#expected(caller, configuration, stored.sourceProfileId, current));
    if (part === 'actor') throw new RuntimeProfileActorError();
    if (part !== null) throw new RuntimeProfileStaleError(part);
    await guard.check();
    return stored;
  }

  /** The profile's runtime Workspace context: this read, then lease and Workspace under the owner lock. */
  workspace(
    caller: PlacementCaller,
    address: EnvironmentAddress,
    profileId: string,
  ): Promise<RuntimeWorkspaceContext> {
    return new RuntimeWorkspaceContextReader({ ...this.deps, profiles: this }).read(
      caller,
      address,
      profileId,
    );
  }

  #guard(caller: PlacementCaller, address: EnvironmentAddress): Guard {
    return new Guard(this.deps, caller, address.projectId, ['ReadRunSelection']);
  }

  #configuration(): AgentHostConfiguration {
    if (this.deps.configuration === undefined) throw new RuntimeProfilesUnavailableError();
    return this.deps.configuration;
  }

  /**
   * The owner (Registered, at the projection's generation), its accepted selection (fresh, and still
   * the pinned one) and the placement's endpoint. `refuse` turns a mismatch into the caller's error.
   */
  async #current(
    guard: Guard,
    address: EnvironmentAddress,
    projection: PlacementProjection,
    refuse: (reason: 'selection' | 'endpoint') => never = (reason) => refuseResolve(reason, address.runId),
  ): Promise<Current> {
    const owner = await guard.environment(address);
    requireActive(owner, projection.lifecycleGeneration);
    const selection = await guard.selection(address.runId);
    if (selection.selectionHash !== owner.runSelectionHash) refuse('selection');
    const endpoint = endpointOfPlacement(projection.resource.placement);
    if (endpoint === null) {
      throw new RuntimeEndpointUnavailableError(
        'no-endpoint',
        'the placement records no AgentHost HTTPS endpoint (Pod IP, Pod UID and Service DNS name)',
      );
    }
    if (projection.resource.endpoint !== receiverEndpointOf(endpoint)) refuse('endpoint');
    return { owner, projection, endpoint };
  }

  #expected(
    caller: PlacementCaller,
    configuration: AgentHostConfiguration,
    sourceProfileId: string,
    current: Current,
  ): NewProfileMapping {
    const configureUrl = configureUrlOf(current.endpoint, configuration.receiver.configurePath);
    if (configureUrl === null) {
      throw new RuntimeEndpointUnavailableError(
        'configure-url-invalid',
        'the configured receiver path does not stay on the receiver endpoint',
      );
    }
    return mappingFor({
      caller,
      sourceProfileId,
      source: sourceOf(configuration, sourceProfileId),
      receiver: configuration.receiver,
      selectionHash: current.owner.runSelectionHash,
      projection: current.projection,
      endpoint: current.endpoint,
      configureUrl,
    });
  }

  /** Under the owner lock, before the write: the same owner, lease, fences, endpoint, authority and selection. */
  async #recheck(tx: Queryable, guard: Guard, current: Current): Promise<void> {
    const { projection, owner } = current;
    const held = await readEnvironment(tx, projection.environmentId);
    if (held === null) throw new EnvironmentNotActiveError('the Environment is gone');
    requireActive(held, projection.lifecycleGeneration);
    const lease = await readCurrentLease(tx, projection.environmentId);
    const moved =
      lease === null ||
      lease.resource === null ||
      lease.state !== 'Active' ||
      isExpired(lease, new Date()) ||
      lease.operationId !== projection.operationId ||
      lease.resourceGeneration !== projection.resourceGeneration ||
      lease.providerFence !== projection.providerFence ||
      lease.currentFencingGeneration !== projection.currentFencingGeneration ||
      lease.resource.resourceId !== projection.resource.resourceId ||
      JSON.stringify(endpointOfPlacement(lease.resource.placement)) !== JSON.stringify(current.endpoint) ||
      (lease.resource.placement['endpoint'] ?? null) !== projection.resource.endpoint;
    if (moved) {
      throw new RuntimeEndpointUnavailableError(
        'placement-changed',
        'the lease or its endpoint changed while the profile resolved; nothing was stored, ask again',
      );
    }
    const selection = await guard.checkWithSelection(projection.runId, tx);
    if (
      selection.selectionHash !== owner.runSelectionHash ||
      held.runSelectionHash !== owner.runSelectionHash
    ) {
      throw new RunSelectionChangedError(projection.runId);
    }
  }
}

function sourceOf(configuration: AgentHostConfiguration, sourceProfileId: string) {
  const source = Object.hasOwn(configuration.profiles, sourceProfileId)
    ? configuration.profiles[sourceProfileId]
    : undefined;
  if (source === undefined) throw new RuntimeProfileNotFoundError('source', sourceProfileId);
  return source;
}

function requireActive(owner: EnvironmentRow, lifecycleGeneration: number): void {
  if (owner.lifecycleState !== 'Registered' || owner.quarantinedAt !== null) {
    throw new EnvironmentNotActiveError(`the Environment is ${owner.lifecycleState}, not an active owner`);
  }
  if (owner.lifecycleGeneration !== lifecycleGeneration) {
    throw new EnvironmentNotActiveError('the Environment moved to another lifecycle generation; ask again');
  }
}

function refuseResolve(reason: 'selection' | 'endpoint', runId: string): never {
  if (reason === 'selection') throw new RunSelectionChangedError(runId);
  throw new RuntimeEndpointUnavailableError(
    'endpoint-mismatch',
    'the placement’s recorded receiver endpoint is not the HTTPS endpoint of its Service name',
  );
}

/** A stored mapping with the resolve's ID must carry exactly the pins this resolve would store. */
function refuseDiffering(stored: NewProfileMapping, expected: NewProfileMapping): void {
  const part = stalePart(stored, expected);
  if (part !== null) throw new RuntimeProfileConflictError(part);
}
