// The runtime profile a configured Host names, as readiness evidence: "readiness rejects an old
// profile when the current endpoint no longer matches the stored one". When the Host says it was
// configured through a resolved profile, its stored mapping must be this Environment's and still
// the profile of the lease the Host was asked about (actors/runtime-profiles/current.ts: the lease
// and its current endpoint, the accepted selection, the source configuration). Readiness is the
// Environment's observation, not an actor's, so the mapping's actor is not compared with the caller.
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { Queryable } from '../../store/db.ts';
import type { EnvironmentRow } from '../../store/environments.ts';
import type { LeaseRow } from '../../store/leases.ts';
import { readProfileMapping } from '../../store/runtime-profiles.ts';
import type { AgentHostReadiness } from '../ports.ts';
import { mappingOwnedBy, staleProfilePart, type ProfileStaleReason } from '../runtime-profiles/current.ts';

/** The profile the Host named and what is wrong with it now (null: nothing); null when it named none. */
export interface ProfileEvidence {
  profileId: string;
  problem: 'unresolved' | ProfileStaleReason | null;
}

export async function profileEvidenceOf(
  q: Queryable,
  env: EnvironmentRow,
  lease: LeaseRow,
  answer: AgentHostReadiness,
  configuration: AgentHostConfiguration | undefined,
): Promise<ProfileEvidence | null> {
  if (!answer.configured || answer.profileId === undefined) return null;
  const { profileId } = answer;
  const mapping = await readProfileMapping(q, profileId);
  if (mapping === null || !mappingOwnedBy(mapping, env)) {
    return { profileId, problem: 'unresolved' };
  }
  const problem = staleProfilePart(mapping, { lease, selectionHash: env.runSelectionHash, configuration });
  return { profileId, problem };
}
