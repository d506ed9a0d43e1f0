// Environment lifecycle routes. Handlers translate HTTP to the lifecycle service and back; they
// never touch rows themselves. Tenant and actor come only from the verified token.
import { OpenAPIHono, createRoute } from '@hono/zod-openapi';
import type { EnvironmentList } from '../../actors/environment-list.ts';
import { RunBindingError } from '../../actors/errors.ts';
import type { LifecycleService } from '../../actors/lifecycle.ts';
import type { AppEnv } from '../context.ts';
import {
  commonProblems,
  environmentPageSchema,
  environmentParams,
  json,
  listQuery,
  lifecycleSchema,
  problem,
  projectOnlyParams,
  projectParams,
  registerBody,
  releaseBody,
  waitOptionsOf,
  waitQuery,
} from '../schemas.ts';

const base = '/api/projects/{projectId}/runs/{runId}/environments';
const security = [{ bearer: [] }];

const register = createRoute({
  method: 'post',
  path: base,
  summary: 'Register an Environment (idempotent on the key)',
  security,
  request: {
    params: projectParams,
    body: { required: true, content: { 'application/json': { schema: registerBody } } },
  },
  responses: {
    201: json(lifecycleSchema, 'Registered now'),
    200: json(lifecycleSchema, 'Already registered under this key: the same Environment'),
    ...commonProblems,
    409: problem('The run has no provider selection, or it changed'),
  },
});

const release = createRoute({
  method: 'post',
  path: `${base}/{environmentId}/release`,
  summary: 'Release an Environment',
  security,
  request: {
    params: environmentParams,
    body: { required: true, content: { 'application/json': { schema: releaseBody } } },
  },
  responses: {
    200: json(lifecycleSchema, 'Released'),
    202: json(lifecycleSchema, 'Releasing: placement is being retired'),
    ...commonProblems,
    404: problem('No such Environment for this caller'),
    409: problem('Lifecycle generation mismatch, or released under another key'),
  },
});

const lifecycle = createRoute({
  method: 'get',
  path: `${base}/{environmentId}/lifecycle`,
  summary: 'Read the durable lifecycle of an Environment',
  security,
  request: { params: environmentParams, query: waitQuery },
  responses: {
    200: json(lifecycleSchema, 'The lifecycle snapshot'),
    ...commonProblems,
    404: problem('No such Environment for this caller'),
    503: problem('Too many waiting requests in this process; ask again without wait'),
  },
});

const listResponses = {
  200: json(environmentPageSchema, 'One page, newest first; nextCursor is null on the last page'),
  ...commonProblems,
  400: problem('A filter or the page size is malformed, or the cursor is not one given for this query'),
};

const listProject = createRoute({
  method: 'get',
  path: '/api/projects/{projectId}/environments',
  summary: "List the project's Environments (filters, cursor pages)",
  security,
  request: { params: projectOnlyParams, query: listQuery },
  responses: listResponses,
});

const listRun = createRoute({
  method: 'get',
  path: base,
  summary: "List the run's Environments (filters, cursor pages)",
  security,
  request: { params: projectParams, query: listQuery },
  responses: listResponses,
});

export function environmentRoutes(service: LifecycleService, list: EnvironmentList): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(listProject, async (c) => {
    // A run-bound token sees its own run only; the project's list would show the other runs.
    if (c.var.principal.runBinding !== undefined) {
      throw new RunBindingError('a run-bound token lists only its own run (…/runs/{runId}/environments)');
    }
    const page = await list.list(c.var.principal, { ...c.req.valid('param'), ...c.req.valid('query') });
    c.header('cache-control', 'no-store');
    return c.json(page, 200);
  });

  app.openapi(listRun, async (c) => {
    const page = await list.list(c.var.principal, { ...c.req.valid('param'), ...c.req.valid('query') });
    c.header('cache-control', 'no-store');
    return c.json(page, 200);
  });

  app.openapi(register, async (c) => {
    const params = c.req.valid('param');
    const body = c.req.valid('json');
    const { created, view } = await service.register(c.var.principal, { ...params, ...body });
    c.header('cache-control', 'no-store');
    c.header('location', `${c.req.path}/${view.environmentId}/lifecycle`);
    return created ? c.json(view, 201) : c.json(view, 200);
  });

  app.openapi(release, async (c) => {
    const { projectId, runId, environmentId } = c.req.valid('param');
    const view = await service.release(
      c.var.principal,
      { projectId, runId, environmentId },
      c.req.valid('json'),
    );
    c.header('cache-control', 'no-store');
    return view.state === 'Released' ? c.json(view, 200) : c.json(view, 202);
  });

  app.openapi(lifecycle, async (c) => {
    const view = await service.read(
      c.var.principal,
      c.req.valid('param'),
      waitOptionsOf(c.req.valid('query')),
    );
    c.header('cache-control', 'no-store');
    return c.json(view, 200);
  });

  return app;
}
