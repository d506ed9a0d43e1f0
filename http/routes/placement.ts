// The v1 placement projection routes: the public one (fresh WriteProjects) and the run-bound
// internal one (fresh ReadRunSelection and a token bound to exactly this project and run). 204
// when there is no placement; `no-store` always; never an option value or a credential.
import { OpenAPIHono, createRoute } from '@hono/zod-openapi';
import type { PlacementRoute, PlacementService } from '../../actors/sandbox/placement.ts';
import { placementProjectionSchema } from '../../actors/sandbox/placement-view.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, json, problem } from '../schemas.ts';

const env = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}';
const projection = placementProjectionSchema.meta({ id: 'PlacementProjection' });

const routeFor = (route: PlacementRoute) =>
  createRoute({
    method: 'get',
    path: route === 'public' ? `${env}/sandbox/v1/placement` : `${env}/sandbox/v1/internal/placement`,
    summary:
      route === 'public'
        ? 'The placement of the exact current, Active, unexpired lease (fresh WriteProjects)'
        : 'The same projection for a run-bound token (fresh ReadRunSelection, exact project/run claims)',
    security: [{ bearer: [] }],
    request: { params: environmentParams },
    responses: {
      200: json(projection, 'The placement projection'),
      204: { description: 'The Environment has no placement (no current lease, or none placed yet)' },
      ...commonProblems,
      403: problem('A permission is missing, or (internal) the token is not bound to this project and run'),
      404: problem('No such Environment for this caller'),
      409: problem('The lease is not Active, expired, or changed while it was read; nothing returned'),
    },
  });

export function placementRoutes(service: PlacementService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  for (const route of ['public', 'internal'] as const) {
    app.openapi(routeFor(route), async (c) => {
      const found = await service.read(c.var.principal, c.req.valid('param'), route);
      return found === null ? c.body(null, 204) : c.json(found, 200);
    });
  }
  return app;
}
