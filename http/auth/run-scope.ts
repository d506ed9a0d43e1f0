// A token bound to a project and run (claims `project` and `run`) acts only within them: a route
// that names another project or run refuses it with 403 `run-binding-required` before it reads or
// writes anything. An unbound token is not affected. Routes name their project and run in the path
// (`runScope`, mounted on every such path in app.ts) or, for Core's internal runtime routes, in the
// body's step reference (`requireRunScope` on it); the service then finds the Environment only
// under that project and run (404 otherwise), so the binding holds for the Environment's own.
import { createMiddleware } from 'hono/factory';
import { RunBindingError } from '../../actors/errors.ts';
import type { AppEnv } from '../context.ts';
import type { Principal } from './principal.ts';

/** What a request names; a part it does not name is not compared. */
export interface RunScope {
  /** Admin paths name the tenant: another tenant's project is another project. */
  tenantId?: string | undefined;
  projectId?: string | undefined;
  runId?: string | undefined;
}

/** The paths that name a project (and a run); an admin run path matches two of them, harmlessly. */
export const RUN_SCOPED_API_PATHS = ['/api/projects/:projectId/runs/:runId/*'] as const;
export const RUN_SCOPED_ADMIN_PATHS = [
  '/admin/tenants/:tenantId/projects/:projectId/*',
  '/admin/tenants/:tenantId/projects/:projectId/runs/:runId/*',
] as const;

export function requireRunScope(principal: Principal, scope: RunScope): void {
  const binding = principal.runBinding;
  if (binding === undefined) return;
  const differs = (named: string | undefined, own: string) => named !== undefined && named !== own;
  if (
    differs(scope.tenantId, principal.tenantId) ||
    differs(scope.projectId, binding.projectId) ||
    differs(scope.runId, binding.runId)
  ) {
    throw new RunBindingError('the token is bound to another project or run');
  }
}

/** The path's project and run (after authentication): the same check for every route under it. */
export const runScope = createMiddleware<AppEnv>(async (c, next) => {
  requireRunScope(c.var.principal, {
    tenantId: c.req.param('tenantId'),
    projectId: c.req.param('projectId'),
    runId: c.req.param('runId'),
  });
  await next();
});
