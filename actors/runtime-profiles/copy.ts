// What a runtime profile mapping is made of, computed without I/O: the AgentHost endpoint a
// placement records, the receiver's configure URL, the derived profile ID and the copied
// replacement profile. The ID is a hash of the requested source profile ID, the actor, the accepted
// selection hash and the observed placement (resource, operation, fences, Pod and Service), so it
// is the same for the same placement and differs as soon as the Pod or the Service does. The copy is
// the source profile with exactly two members replaced, `profileId` and `configureEndpoint`.
import { createHash } from 'node:crypto';
import type { AgentHostConfiguration, ProfileDocument } from '../../config/agenthost.ts';
import { base32 } from '../../lib/base32.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { NewProfileMapping } from '../../store/runtime-profiles.ts';
import type { PlacementProjection } from '../sandbox/placement-view.ts';
import type { AgentHostEndpoint } from '../ports.ts';

/** The AgentHost's HTTPS port (providers/agent-sandbox/agent-host-profile.ts). */
export const AGENT_HOST_PORT = 8443;
export const PROFILE_ID_PATTERN = /^rp_[a-z2-7]{52}$/;

/** Where the placement says its AgentHost answers (the keys of agentHostEndpointOf); null if it does not. */
export function endpointOfPlacement(placement: Readonly<Record<string, string>>): AgentHostEndpoint | null {
  const { podIP: podIp, podUid, serviceDns } = placement;
  if (podIp === undefined || podUid === undefined || serviceDns === undefined) return null;
  return { podIp, podUid, serverName: serviceDns, port: AGENT_HOST_PORT };
}

/** The receiver's HTTPS endpoint as the provider records it: the Service name, never the Pod IP. */
export const receiverEndpointOf = (endpoint: AgentHostEndpoint): string =>
  `https://${endpoint.serverName}:${endpoint.port}`;

/** The configure URL on the receiver endpoint; null unless it stays on that exact origin over HTTPS. */
export function configureUrlOf(endpoint: AgentHostEndpoint, configurePath: string): string | null {
  const origin = receiverEndpointOf(endpoint);
  let url: URL;
  try {
    url = new URL(configurePath, origin);
  } catch {
    return null;
  }
  if (url.origin !== new URL(origin).origin || url.search !== '' || url.hash !== '') return null;
  return url.href;
}

/** The source profile and receiver configuration a copy depends on; a reload that changes either shows. */
export function sourceConfigHash(
  sourceProfileId: string,
  source: ProfileDocument,
  receiver: AgentHostConfiguration['receiver'],
): string {
  return sha256Hex(canonicalJson({ sourceProfileId, source, receiver }));
}

export const profileHash = (profile: unknown): string => sha256Hex(canonicalJson(profile));

export interface MappingInputs {
  caller: { tenantId: string; subject: string };
  sourceProfileId: string;
  source: ProfileDocument;
  receiver: AgentHostConfiguration['receiver'];
  selectionHash: string;
  /** The placement the mapping binds (a projection, or the same facts read from a lease row). */
  projection: Pick<
    PlacementProjection,
    | 'environmentId'
    | 'projectId'
    | 'runId'
    | 'operationId'
    | 'resourceGeneration'
    | 'providerFence'
    | 'lifecycleGeneration'
  > & { resource: Pick<PlacementProjection['resource'], 'resourceId'> };
  endpoint: AgentHostEndpoint;
  configureUrl: string;
}

export function deriveProfileId(m: MappingInputs): string {
  const digest = createHash('sha256')
    .update(
      canonicalJson({
        sourceProfileId: m.sourceProfileId,
        tenantId: m.caller.tenantId,
        actor: m.caller.subject,
        selectionHash: m.selectionHash,
        environmentId: m.projection.environmentId,
        resourceId: m.projection.resource.resourceId,
        operationId: m.projection.operationId,
        resourceGeneration: m.projection.resourceGeneration,
        providerFence: m.projection.providerFence,
        podUid: m.endpoint.podUid,
        podIp: m.endpoint.podIp,
        serverName: m.endpoint.serverName,
        port: m.endpoint.port,
      }),
    )
    .digest();
  return `rp_${base32(digest)}`;
}

/** The mapping a resolve would store now, from the current placement and configuration. */
export function mappingFor(m: MappingInputs): NewProfileMapping {
  const profileId = deriveProfileId(m);
  const profile = {
    ...m.source,
    profileId,
    configureEndpoint: { url: m.configureUrl, audience: m.receiver.audience },
  };
  return {
    profileId,
    environmentId: m.projection.environmentId,
    tenantId: m.caller.tenantId,
    projectId: m.projection.projectId,
    runId: m.projection.runId,
    sourceProfileId: m.sourceProfileId,
    actor: m.caller.subject,
    selectionHash: m.selectionHash,
    sourceConfigHash: sourceConfigHash(m.sourceProfileId, m.source, m.receiver),
    resourceId: m.projection.resource.resourceId,
    operationId: m.projection.operationId,
    resourceGeneration: m.projection.resourceGeneration,
    providerFence: m.projection.providerFence,
    lifecycleGeneration: m.projection.lifecycleGeneration,
    podUid: m.endpoint.podUid,
    podIp: m.endpoint.podIp,
    serverName: m.endpoint.serverName,
    port: m.endpoint.port,
    endpoint: receiverEndpointOf(m.endpoint),
    configureUrl: m.configureUrl,
    audience: m.receiver.audience,
    profile,
    profileHash: profileHash(profile),
  };
}

/** Which pinned part of a stored mapping differs from the one expected now; null when none does. */
export function stalePart(
  stored: NewProfileMapping,
  expected: NewProfileMapping,
): 'actor' | 'selection' | 'endpoint' | 'source-configuration' | 'profile-copy' | null {
  const differs = (keys: readonly (keyof NewProfileMapping)[]) =>
    keys.some((k) => canonicalJson(stored[k]) !== canonicalJson(expected[k]));
  if (differs(['tenantId', 'actor'])) return 'actor';
  if (differs(['selectionHash'])) return 'selection';
  const placement = [
    'environmentId',
    'lifecycleGeneration',
    'resourceId',
    'operationId',
    'resourceGeneration',
    'providerFence',
  ] as const;
  if (differs([...placement, 'podUid', 'podIp', 'serverName', 'port', 'endpoint'])) return 'endpoint';
  if (differs(['sourceProfileId', 'sourceConfigHash'])) return 'source-configuration';
  if (differs(['profileId', 'configureUrl', 'audience', 'profile', 'profileHash'])) return 'profile-copy';
  if (profileHash(stored.profile) !== stored.profileHash) return 'profile-copy';
  return null;
}
