import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import type { JournalService } from '../../actors/journal.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, json, problem } from '../schemas.ts';

const entrySchema = z
  .object({
    revision: z.number().int(),
    event: z.record(z.string(), z.unknown()),
    from: z.unknown(),
    to: z.unknown(),
    actor: z.string(),
    source: z
      .enum(['http', 'worker', 'reconciler', 'observer', 'provider', 'system'])
      .nullable()
      .describe('Where the event came from; null on entries journaled before sources were recorded'),
    recordedAt: z.string(),
  })
  .openapi('JournalEntry');

const route = createRoute({
  method: 'get',
  path: '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/journal',
  summary: "The Environment's transitions, one per revision (event fences and identifiers only)",
  security: [{ bearer: [] }],
  request: { params: environmentParams },
  responses: {
    200: json(z.object({ environmentId: z.string(), entries: z.array(entrySchema) }), 'Oldest first'),
    ...commonProblems,
    404: problem('No such Environment for this caller'),
  },
});

export function journalRoutes(service: JournalService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(route, async (c) => {
    const address = c.req.valid('param');
    const entries = await service.read(c.var.principal, address);
    c.header('cache-control', 'no-store');
    return c.json({ environmentId: address.environmentId, entries }, 200);
  });
  return app;
}
