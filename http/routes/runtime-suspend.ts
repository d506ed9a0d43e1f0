// Core's internal suspend routes (docs/suspend-resume.md, docs/api.md "Suspend resolve"). Core calls
// them with the original actor's expiring bearer (the /internal/* auth middleware requires it),
// which stays the actor: no service credential replaces it. The body is validated strictly before
// anything else (400, unknown fields refused: resolve and flush take no Workspace evidence, and
// release-placement only the evidence Core saved, which Core must confirm); then fresh authority
// for the caller's own Environment (403, 404), then Core (503 runtime-core-unavailable when none is
// configured). Every answer, an error too, is no-store.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  runtimeOperationSchema,
  savedOperationEvidenceSchema,
} from '../../actors/runtime-core/runtime-operation.ts';
import { FLUSH_LIST_LIMIT, type WorkspaceFlushService } from '../../actors/suspend/flush.ts';
import type { PlacementReleaseService } from '../../actors/suspend/release-placement.ts';
import type { SuspendService } from '../../actors/suspend/resolve.ts';
import { sessionProofSchema } from '../../actors/suspend/suspend-checks.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, json, problem } from '../schemas.ts';
import { actorOf } from './actor.ts';

const resolvePath = '/internal/runtime/suspend/resolve';
const releasePath = '/internal/runtime/suspend/release-placement';

export const suspendResolveBody = z
  .strictObject({ operation: runtimeOperationSchema, session: sessionProofSchema })
  .meta({ id: 'SuspendResolveRequest' });

const count = z.number().int().nonnegative();

const resolution = z
  .object({
    operationId: z.string(),
    stateRevision: count,
    storage: z.object({
      volumeId: z.string(),
      resourceGeneration: count,
      providerId: z.string(),
      pvc: z.object({ namespace: z.string(), name: z.string(), uid: z.string() }),
    }),
    providerBinding: z.object({
      providerId: z.string(),
      resourceId: z.string(),
      leaseOperationId: z.string(),
      lifecycleGeneration: count,
      resourceGeneration: count,
      providerFence: count,
    }),
    transitionRevision: count,
    dataGeneration: count,
    nextDataGeneration: count,
  })
  .meta({ id: 'SuspendResolution' });

const env = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}';
const identifier = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'is not an identifier');
const generation = z.number().int().positive().max(2_147_483_647);

const flushParams = environmentParams.extend({
  volumeId: identifier.openapi({ param: { name: 'volumeId', in: 'path' }, example: 'vol_0123abcd' }),
});

/** Core's saved Fenced request (what resolve answered): no Workspace evidence of any kind. */
export const workspaceFlushBody = z
  .strictObject({
    stepId: identifier,
    operationId: z.string().min(1).max(200),
    transitionRevision: generation,
    nextDataGeneration: generation,
  })
  .meta({ id: 'WorkspaceFlushRequest' });

const flushView = z
  .object({
    flushOperationId: z.string(),
    operationId: z.string(),
    stepId: z.string(),
    volumeId: z.string(),
    state: z.enum(['Reserved', 'Uncertain', 'Verified', 'Refused']),
    lease: z.object({ operationId: z.string(), resourceGeneration: count, providerFence: count }),
    transitionRevision: count,
    dataGeneration: count,
    nextDataGeneration: count,
    deliveries: count,
    receipt: z.record(z.string(), z.unknown()).nullable(),
    hostReceiptSha256: z.string().nullable(),
    reservedAt: z.string(),
    settledAt: z.string().nullable(),
  })
  .meta({ id: 'WorkspaceFlush' });

/** Core's Committed suspend operation as it holds it, and the evidence it saved (nothing else). */
export const placementReleaseBody = z
  .strictObject({ operation: runtimeOperationSchema, evidence: savedOperationEvidenceSchema })
  .meta({ id: 'PlacementReleaseRequest' });

const placementRelease = z
  .object({
    operationId: z.string(),
    state: z.enum(['Released', 'Releasing']),
    lease: z.object({ operationId: z.string(), resourceGeneration: count, providerFence: count }),
    workspace: z.object({
      volumeId: z.string(),
      state: z.enum(['Available', 'Attached']),
      transitionRevision: count,
      dataGeneration: count,
    }),
  })
  .meta({ id: 'PlacementRelease' });

const routes = {
  flushes: createRoute({
    method: 'get',
    path: `${env}/workspace-flushes`,
    summary: `The Environment's Workspace flushes, newest first (at most ${FLUSH_LIST_LIMIT}); asks no Host`,
    security: [{ bearer: [] }],
    request: { params: environmentParams },
    responses: {
      200: json(
        z.object({ flushes: z.array(flushView) }).meta({ id: 'WorkspaceFlushList' }),
        'Persisted flushes of every volume and lease of this Environment',
      ),
      ...commonProblems,
      404: problem('No such Environment for this caller'),
    },
  }),
  flush: createRoute({
    method: 'post',
    path: `${env}/workspace-volumes/{volumeId}/flush`,
    summary:
      'Flush the Workspace through its AgentHost before a suspend; only a verified receipt advances it',
    security: [{ bearer: [] }],
    request: {
      params: flushParams,
      body: { required: true, content: { 'application/json': { schema: workspaceFlushBody } } },
    },
    responses: {
      200: json(
        z.object({ flush: flushView, replayed: z.boolean() }).meta({ id: 'WorkspaceFlushResult' }),
        'Verified: the receipt, and the data generation it advanced to (replayed: the saved one)',
      ),
      ...commonProblems,
      404: problem('No such Environment for this caller'),
      409: problem(
        'A refusal that changed nothing (suspend-operation-not-current, suspend-operation-state, ' +
          'suspend-request-mismatch, runtime-registration-missing, suspend-placement-mismatch, ' +
          'workspace-not-attached, workspace-transition-stale, workspace-flush-conflict, ' +
          'workspace-flush-not-reservable), or workspace-flush-refused: the Host refused before flushing',
      ),
      502: problem("core-answer-refused: Core's answer broke the contract"),
      503: problem(
        'workspace-flush-uncertain (delivered, not verified: kept open, repeat the same request), ' +
          'runtime-core-unavailable or core-unavailable',
      ),
    },
  }),
  resolve: createRoute({
    method: 'post',
    path: resolvePath,
    summary: "Resolve Core's Reserved suspend operation to the exact Workspace flush request (read-only)",
    security: [{ bearer: [] }],
    request: { body: { required: true, content: { 'application/json': { schema: suspendResolveBody } } } },
    responses: {
      200: json(
        resolution,
        'The Storage resource, provider binding, transition revision and next data generation',
      ),
      ...commonProblems,
      404: problem("No such Environment for this caller (another tenant's step reads the same)"),
      409: problem(
        'A refusal that changed nothing: suspend-operation-not-current, suspend-operation-state, ' +
          'suspend-operation-changed, runtime-registration-missing, runtime-session-mismatch, ' +
          'suspend-placement-mismatch, workspace-not-attached, workspace-transition-stale, ' +
          'workspace-storage-unpinned',
      ),
      502: problem("core-answer-refused: Core's answer broke the contract"),
      503: problem(
        'runtime-core-unavailable (no Core configured) or core-unavailable (Core cannot be asked)',
      ),
    },
  }),
  release: createRoute({
    method: 'post',
    path: releasePath,
    summary:
      "Release the placement of Core's Committed suspend operation once Core confirms the saved flush evidence",
    security: [{ bearer: [] }],
    request: {
      body: { required: true, content: { 'application/json': { schema: placementReleaseBody } } },
    },
    responses: {
      200: json(placementRelease, 'Released: the provider confirmed and the Workspace is detached'),
      202: json(placementRelease, 'Releasing: the release is under way; repeat the same request'),
      ...commonProblems,
      404: problem("No such Environment for this caller (another tenant's step reads the same)"),
      409: problem(
        'A refusal that changed nothing: suspend-operation-not-current, suspend-operation-state, ' +
          'suspend-operation-changed, runtime-registration-missing, suspend-flush-evidence-mismatch, ' +
          'suspend-release-not-confirmed, suspend-placement-mismatch',
      ),
      502: problem("core-answer-refused: Core's answer broke the contract"),
      503: problem(
        'runtime-core-unavailable (no Core configured) or core-unavailable (Core cannot be asked)',
      ),
    },
  }),
};

export function runtimeSuspendRoutes(
  service: SuspendService,
  flushes: WorkspaceFlushService,
  releases: PlacementReleaseService,
): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use(
    '/api/projects/:projectId/runs/:runId/environments/:environmentId/workspace-volumes/:volumeId/flush',
    async (c, next) => {
      await next();
      c.header('cache-control', 'no-store');
    },
  );
  app.use(
    '/api/projects/:projectId/runs/:runId/environments/:environmentId/workspace-flushes',
    async (c, next) => {
      await next();
      c.header('cache-control', 'no-store');
    },
  );
  app.openapi(routes.flushes, async (c) =>
    c.json({ flushes: await flushes.list(actorOf(c), c.req.valid('param')) }, 200),
  );
  app.openapi(routes.flush, async (c) => {
    const { volumeId, ...address } = c.req.valid('param');
    return c.json(await flushes.flush(actorOf(c), address, volumeId, c.req.valid('json')), 200);
  });
  app.use('/internal/runtime/suspend/*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  app.openapi(routes.resolve, async (c) => {
    const request = c.req.valid('json');
    return c.json(await service.resolve(actorOf(c, request.operation.ref), request), 200);
  });
  app.openapi(routes.release, async (c) => {
    const request = c.req.valid('json');
    const answer = await releases.release(actorOf(c, request.operation.ref), request);
    return answer.state === 'Released' ? c.json(answer, 200) : c.json(answer, 202);
  });
  return app;
}
