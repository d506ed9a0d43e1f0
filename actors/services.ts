// Builds the actor runtime's use cases over one database and one set of ports. Routes receive these
// services and nothing else; the runtime and the attempt runner are built by the caller (the
// composition root), since workers need them too.
import type { AgentHostConfiguration } from '../config/agenthost.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import type { Database } from '../store/db.ts';
import type { LeaseRow } from '../store/leases.ts';
import { BuildTestService, type BuildTestOffer } from './build-test/service.ts';
import { environmentDefinition } from './environment-definition.ts';
import { EnvironmentList } from './environment-list.ts';
import { JournalService } from './journal.ts';
import { LifecycleService } from './lifecycle.ts';
import { EmbeddedAgentHost } from './agenthost/embedded.ts';
import type {
  AgentHost,
  AttemptRunner,
  NetworkPolicyVerifier,
  ProjectsAuthority,
  RunSelectionSource,
  RuntimeCore,
  WorkspaceStorage,
} from './ports.ts';
import type { NetworkPolicyWriter } from './sandbox/network-policy-writer.ts';
import { ActorRuntime } from './runtime.ts';
import { PlacementService } from './sandbox/placement.ts';
import { RuntimeProfileService } from './runtime-profiles/service.ts';
import { SandboxService } from './sandbox/service.ts';
import { ResumeBootstrapService } from './resume/bootstrap.ts';
import { ResumeService } from './resume/service.ts';
import type { RuntimeEvents } from './runtime-events/ports.ts';
import { WorkspaceFlushService } from './suspend/flush.ts';
import { PlacementReleaseService } from './suspend/release-placement.ts';
import { SuspendService } from './suspend/resolve.ts';
import { WorkspaceService } from './workspace/service.ts';
import { EnvironmentChanges } from './wait.ts';

export type EnvironmentRuntime = ActorRuntime<EnvironmentEvent>;

export interface Services {
  lifecycle: LifecycleService;
  environments: EnvironmentList;
  sandbox: SandboxService;
  placement: PlacementService;
  runtimeProfiles: RuntimeProfileService;
  workspaces: WorkspaceService;
  journal: JournalService;
  buildTest: BuildTestService;
  suspend: SuspendService;
  workspaceFlush: WorkspaceFlushService;
  resume: ResumeService;
  resumeBootstrap: ResumeBootstrapService;
  placementRelease: PlacementReleaseService;
  /** Long-poll wake-ups; other processes' commits are announced to it (workers/change-feed.ts). */
  changes: EnvironmentChanges;
}

/** The Environment actor runtime; committed effects go nowhere until `setEffectSink`. */
export function createEnvironmentRuntime(db: Database): EnvironmentRuntime {
  return new ActorRuntime<EnvironmentEvent>({ db, definition: environmentDefinition });
}

export function createServices(deps: {
  db: Database;
  runtime: EnvironmentRuntime;
  runner: AttemptRunner;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  provider: Pick<SandboxProvider, 'identity' | 'optionsSnapshot'>;
  networkPolicies: NetworkPolicyVerifier;
  /** Lease time to live from reservation (unset: leases do not expire). */
  leaseTtlMs?: number;
  /** The AgentHost port (default: the embedded stand-in, configured once its sandbox started). */
  agentHost?: AgentHost;
  /** The immutable AgentHost configuration (unset: runtime profile resolve answers 409). */
  agentHostProfiles?: AgentHostConfiguration;
  /** Workspace storage read back at provision (default: the embedded table over db). */
  workspaceStorage?: WorkspaceStorage;
  /** The AcceptedBuildTestProfile and the Core port (unset: BuildTest is not offered, 409). */
  buildTest?: BuildTestOffer;
  /** Core's suspend/resume side (unset: no Core is configured, and suspend and resume answer 503). */
  runtimeCore?: RuntimeCore;
  /** The network policy owner's write, for resume (unset: resume cannot reapply rules, 503). */
  networkPolicyWriter?: NetworkPolicyWriter;
  /** Events' protected material read, for resume bootstrap (unset: bootstrap answers 503). */
  runtimeEvents?: RuntimeEvents;
  /** Told of every inspection answer ready for dispatch (actors/sandbox/inspection.ts). */
  onReady?: (lease: LeaseRow) => void;
}): Services {
  const agentHost = deps.agentHost ?? new EmbeddedAgentHost({ db: deps.db });
  const placement = new PlacementService(deps);
  const { agentHostProfiles: configuration } = deps;
  const changes = new EnvironmentChanges({ db: deps.db, runtime: deps.runtime });
  const sandbox = new SandboxService({ ...deps, agentHost, changes });
  return {
    lifecycle: new LifecycleService({ ...deps, changes }),
    environments: new EnvironmentList(deps),
    sandbox,
    placement,
    runtimeProfiles: new RuntimeProfileService({
      ...deps,
      placement,
      agentHost,
      ...(configuration === undefined ? {} : { configuration }),
    }),
    workspaces: new WorkspaceService(deps),
    journal: new JournalService(deps),
    buildTest: new BuildTestService({
      ...deps,
      ...(deps.buildTest === undefined ? {} : { offer: deps.buildTest }),
    }),
    suspend: new SuspendService(deps),
    workspaceFlush: new WorkspaceFlushService({ ...deps, agentHost }),
    placementRelease: new PlacementReleaseService(deps),
    changes,
    resume: new ResumeService({ ...deps, agentHost, sandbox }),
    resumeBootstrap: new ResumeBootstrapService({ ...deps, agentHost }),
  };
}
