// The actor of the routes that call on Core's behalf or ask Core (BuildTest, suspend, resume): the
// caller and the bearer it presented, which stays unprintable (PresentedBearer). Core's internal
// runtime routes name their Environment by a step reference in the body rather than in the path;
// passing it here refuses a token bound to another project or run before the step is opened.
import type { Context } from 'hono';
import type { BuildTestActor } from '../../actors/build-test/requests.ts';
import type { RuntimeStepRef } from '../../actors/runtime-core/runtime-operation.ts';
import { requireRunScope } from '../auth/run-scope.ts';
import type { AppEnv } from '../context.ts';

export function actorOf(c: Context<AppEnv>, step?: RuntimeStepRef): BuildTestActor {
  const { principal } = c.var;
  if (step !== undefined) requireRunScope(principal, { projectId: step.projectId, runId: step.runId });
  return { caller: { tenantId: principal.tenantId, subject: principal.subject }, bearer: c.var.bearer };
}
