// Ports for services Sandlot does not own. Each has an embedded implementation backed by our own
// tables (store/) and, in production, a client of the real thing (an HTTP service, or for network
// policies the Kubernetes API). Implementations accept an optional `via` handle so a recheck made
// inside a transaction reads through that transaction; those that read no table ignore it.
import type { ProviderIdentity } from '../providers/provider.ts';
import type { AttemptRow } from '../store/attempts.ts';
import type { Queryable } from '../store/db.ts';

export const permissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'] as const;
export type Permission = (typeof permissions)[number];

export interface Caller {
  tenantId: string;
  subject: string;
}

export interface ProjectsAuthority {
  /** The caller's current permissions on one project of its own tenant (empty when none). */
  permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>>;
}

/** A provider a run may use: what the provider advertises, and whether the run requires it alone. */
export interface ProviderCandidate extends ProviderIdentity {
  exclusive: boolean;
}

export interface RunSelection {
  tenantId: string;
  projectId: string;
  runId: string;
  candidates: ProviderCandidate[];
  /** SHA-256 of the canonical candidate list: what an Environment pins at registration. */
  selectionHash: string;
}

export interface RunSelectionSource {
  get(tenantId: string, projectId: string, runId: string, via?: Queryable): Promise<RunSelection | null>;
}

export type NetworkPolicyVerdict = { verified: true } | { verified: false; reason: string };

export interface NetworkPolicyVerifier {
  /**
   * Fresh verification that `generation` is the project's current network policy and is in force:
   * `verified: false` with a reason when it is not. Throws when the source of truth cannot answer
   * (a failed or partial read), so an outage is never mistaken for a verdict either way.
   */
  verify(
    tenantId: string,
    projectId: string,
    generation: number,
    via?: Queryable,
  ): Promise<NetworkPolicyVerdict>;
}

/**
 * The one attempt runner (workers/), as use cases reach it: runs a committed attempt now, through
 * the same begin → provider call → complete path every queued attempt takes, and answers its row
 * once resolved, or as it stands when `timeoutMs` ran out (still Pending or Dispatched).
 */
export interface AttemptRunner {
  runNow(attemptId: string, timeoutMs: number): Promise<AttemptRow | null>;
}
