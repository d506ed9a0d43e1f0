// Whether a stored runtime profile mapping is still the profile of a lease: the one check that the
// runtime Workspace context read, resume bootstrap and readiness (the Host's configuration) apply
// to a profile resolved earlier. A mapping is bound to the placement and AgentHost endpoint it was
// resolved for; once the Pod or the Service is replaced, the current endpoint no longer matches the
// stored one and the old profile is refused (a new one must be resolved). Its pins are checked the
// same way: the accepted selection, the source profile and receiver configuration (a reload that
// changed them fails closed), and the copy the current configuration would make. Pure: the caller
// reads the rows, under whatever lock its own invariant needs.
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { LeaseRow } from '../../store/leases.ts';
import type { ProfileMappingRow } from '../../store/runtime-profiles.ts';
import { configureUrlOf, endpointOfPlacement, mappingFor, stalePart } from './copy.ts';

/** True when the mapping was resolved for exactly this Environment of this tenant, project and run. */
export function mappingOwnedBy(
  mapping: ProfileMappingRow,
  owner: { tenantId: string; projectId: string; runId: string; environmentId: string },
): boolean {
  return (
    mapping.tenantId === owner.tenantId &&
    mapping.projectId === owner.projectId &&
    mapping.runId === owner.runId &&
    mapping.environmentId === owner.environmentId
  );
}

export type ProfileStaleReason = 'actor' | 'selection' | 'endpoint' | 'source-configuration' | 'profile-copy';

/** True when the mapping names exactly this lease and the AgentHost endpoint its placement records now. */
export function mapsLease(mapping: ProfileMappingRow, lease: LeaseRow): boolean {
  if (lease.resource === null) return false;
  const endpoint = endpointOfPlacement(lease.resource.placement);
  return (
    lease.environmentId === mapping.environmentId &&
    lease.operationId === mapping.operationId &&
    lease.lifecycleGeneration === mapping.lifecycleGeneration &&
    lease.resourceGeneration === mapping.resourceGeneration &&
    lease.providerFence === mapping.providerFence &&
    lease.resource.resourceId === mapping.resourceId &&
    endpoint?.podUid === mapping.podUid &&
    endpoint.podIp === mapping.podIp &&
    endpoint.serverName === mapping.serverName &&
    endpoint.port === mapping.port &&
    lease.resource.placement['endpoint'] === mapping.endpoint
  );
}

export interface ProfileNow {
  /** The lease the profile is used for now (the current one, read by the caller). */
  lease: LeaseRow;
  /** The owner's accepted run selection hash. */
  selectionHash: string;
  /** The immutable AgentHost configuration (unset: no source profile can still match). */
  configuration: AgentHostConfiguration | undefined;
  /** Who uses the profile, when the use is an actor's own (bootstrap); readiness names none. */
  actor?: { tenantId: string; subject: string };
}

/** Which part of `mapping` is not the profile of `now.lease` any more; null when every part holds. */
export function staleProfilePart(mapping: ProfileMappingRow, now: ProfileNow): ProfileStaleReason | null {
  const { actor, configuration, lease } = now;
  if (actor !== undefined && (mapping.tenantId !== actor.tenantId || mapping.actor !== actor.subject)) {
    return 'actor';
  }
  if (mapping.selectionHash !== now.selectionHash) return 'selection';
  const endpoint = lease.resource === null ? null : endpointOfPlacement(lease.resource.placement);
  if (!mapsLease(mapping, lease) || endpoint === null || lease.resource === null) return 'endpoint';
  const profiles = configuration?.profiles ?? {};
  const source = Object.hasOwn(profiles, mapping.sourceProfileId)
    ? profiles[mapping.sourceProfileId]
    : undefined;
  if (configuration === undefined || source === undefined) return 'source-configuration';
  const configureUrl = configureUrlOf(endpoint, configuration.receiver.configurePath);
  if (configureUrl === null) return 'profile-copy';
  const expected = mappingFor({
    caller: { tenantId: mapping.tenantId, subject: mapping.actor },
    sourceProfileId: mapping.sourceProfileId,
    source,
    receiver: configuration.receiver,
    selectionHash: mapping.selectionHash,
    projection: {
      environmentId: lease.environmentId,
      projectId: mapping.projectId,
      runId: mapping.runId,
      operationId: lease.operationId,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      lifecycleGeneration: lease.lifecycleGeneration,
      resource: { resourceId: lease.resource.resourceId },
    },
    endpoint,
    configureUrl,
  });
  return stalePart(mapping, expected);
}
