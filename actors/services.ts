// Builds the actor runtime and the use-case services over one database and one set of ports.
// The effect hand-off is bound late: the workers that receive it need the runtime themselves.
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import type { Database } from '../store/db.ts';
import type { OutboxRow } from '../store/outbox.ts';
import { environmentDefinition } from './environment-definition.ts';
import { LifecycleService } from './lifecycle.ts';
import type { NetworkPolicyVerifier, ProjectsAuthority, RunSelectionSource } from './ports.ts';
import { ActorRuntime } from './runtime.ts';
import { SandboxService } from './sandbox.ts';

export interface Services {
  runtime: ActorRuntime<EnvironmentEvent>;
  lifecycle: LifecycleService;
  sandbox: SandboxService;
  /** Where committed outbox rows go; set once the workers exist. */
  setEffectSink(sink: (rows: OutboxRow[]) => void): void;
}

export function createServices(deps: {
  db: Database;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  provider: SandboxProvider;
  networkPolicies: NetworkPolicyVerifier;
}): Services {
  let sink: (rows: OutboxRow[]) => void = () => undefined;
  const runtime = new ActorRuntime<EnvironmentEvent>({
    db: deps.db,
    definition: environmentDefinition,
    onEffects: (rows) => sink(rows),
  });
  return {
    runtime,
    lifecycle: new LifecycleService({ ...deps, runtime }),
    sandbox: new SandboxService({ ...deps, runtime }),
    setEffectSink: (next) => {
      sink = next;
    },
  };
}
