// How every suspend step opens, the same way: the caller's own Environment under fresh authority
// (WriteProjects and ReadRunSelection, as BuildTest), then Core's suspend/resume side, which must be
// configured (503 otherwise: Environment never decides a suspend alone). The caller owes the closing
// checks (`guard.after`, `guard.check`, `guard.commit`) for everything it reads or writes after.
import { EnvironmentNotFoundError } from '../errors.ts';
import { Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { Permission, RuntimeCore } from '../ports.ts';
import type { RuntimeStepRef } from '../runtime-core/runtime-operation.ts';
import type { BuildTestActor } from '../build-test/requests.ts';
import { SuspendUnavailableError } from './errors.ts';

/** Who asks: the original actor Core acts for, with the bearer it presented (never printed). */
export type SuspendActor = BuildTestActor;

export interface OpenedSuspendStep {
  guard: Guard;
  core: RuntimeCore;
  address: EnvironmentAddress;
}

const suspendPermissions: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];

/** Opens a step Core names by its reference: another tenant's step is not found. */
export function openSuspendStep(
  deps: AuthorityDeps & { runtimeCore?: RuntimeCore | undefined },
  actor: SuspendActor,
  ref: RuntimeStepRef,
): Promise<OpenedSuspendStep> {
  if (actor.caller.tenantId !== ref.tenantId) throw new EnvironmentNotFoundError(ref.environmentId);
  const { projectId, runId, environmentId } = ref;
  return openSuspendAddress(deps, actor, { projectId, runId, environmentId });
}

/** Opens a step on the caller's Environment at `address` (a route path names it). */
export async function openSuspendAddress(
  deps: AuthorityDeps & { runtimeCore?: RuntimeCore | undefined },
  actor: SuspendActor,
  address: EnvironmentAddress,
): Promise<OpenedSuspendStep> {
  const guard = new Guard(deps, actor.caller, address.projectId, suspendPermissions);
  await guard.environment(address);
  const core = deps.runtimeCore;
  if (core === undefined) throw new SuspendUnavailableError();
  return { guard, core, address };
}
