// The runtime profile a resume bootstrap's registration names (docs/suspend-resume.md "Bootstrap"):
// Core registers the new Runtime with the profile the resolver returned for the restored placement,
// and bootstrap accepts it only while its stored mapping is still that lease's, at the AgentHost
// endpoint the lease's placement records now, with its actor, selection and source configuration
// unchanged (actors/runtime-profiles/current.ts, the check the runtime Workspace context read
// applies). A profile resolved for the suspended source names a Pod and Service that are gone: it
// is refused, as is a profile ID with no stored mapping of this Environment, unless no resolver is
// configured at all (no AgentHost configuration: no profile could ever be resolved, and the ID is
// Core's launch profile).
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { Queryable } from '../../store/db.ts';
import { readEnvironment } from '../../store/environments.ts';
import type { LeaseRow } from '../../store/leases.ts';
import { readProfileMapping } from '../../store/runtime-profiles.ts';
import { PROFILE_ID_PATTERN } from '../runtime-profiles/copy.ts';
import { staleProfilePart } from '../runtime-profiles/current.ts';
import type { SuspendActor } from '../suspend/open.ts';
import type { ResumeBootstrapRequest } from './bootstrap-requests.ts';
import { refuseResumeOn } from './errors.ts';

/**
 * Refuses (409 `resume-profile-unresolved` or `resume-profile-stale`) unless the registration's
 * profile is the restored `lease`'s own; the actor is checked when the caller is known.
 */
export async function checkBootstrapProfile(
  q: Queryable,
  configuration: AgentHostConfiguration | undefined,
  request: ResumeBootstrapRequest,
  lease: LeaseRow,
  actor?: SuspendActor,
): Promise<void> {
  const { profileId } = request.registration;
  const { ref } = request.operation;
  const stored = await readProfileMapping(q, profileId);
  const mapping =
    stored !== null &&
    stored.tenantId === ref.tenantId &&
    stored.projectId === ref.projectId &&
    stored.runId === ref.runId &&
    stored.environmentId === ref.environmentId
      ? stored
      : null;
  if (mapping === null) {
    refuseResumeOn(
      'resume-profile-unresolved',
      PROFILE_ID_PATTERN.test(profileId) || configuration !== undefined
        ? `registration ${request.registration.registrationId} names runtime profile ${profileId}, which was never resolved for this Environment: resolve one for the restored sandbox and register with it`
        : null,
    );
    return;
  }
  const owner = await readEnvironment(q, ref.environmentId);
  const part = staleProfilePart(mapping, {
    lease,
    selectionHash: owner?.runSelectionHash ?? '',
    configuration,
    ...(actor === undefined
      ? {}
      : { actor: { tenantId: actor.caller.tenantId, subject: actor.caller.subject } }),
  });
  refuseResumeOn(
    'resume-profile-stale',
    part === null
      ? null
      : `runtime profile ${profileId} is stale for the restored lease ${lease.operationId} (${part} changed): resolve a new profile and register with it`,
  );
}
