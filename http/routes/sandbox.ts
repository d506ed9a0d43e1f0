// Sandbox lease routes and the Workspace volume route. Handlers translate HTTP to the sandbox
// service; provider options and request bodies of attempts never appear in an answer.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import type { SandboxService } from '../../actors/sandbox/service.ts';
import type { WorkspaceService } from '../../actors/workspace/service.ts';
import type { AttemptRow } from '../../store/attempts.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, json, problem, waitOptionsOf } from '../schemas.ts';
import {
  abandonBody,
  attemptSchema,
  cleanupSchema,
  inspectSchema,
  leaseSchema,
  inspectQuery,
  provisionBody,
  reconcileBody,
  reconcileSchema,
  renewBody,
  renewSchema,
  volumeBody,
  volumeSchema,
} from '../sandbox-schemas.ts';

const env = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}';
const security = [{ bearer: [] }];
const body = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const problems = {
  ...commonProblems,
  404: problem('No such Environment, lease or operation for this caller'),
  409: problem('Fence, state, Workspace, network policy or provider selection conflict; nothing changed'),
};

const routes = {
  volume: createRoute({
    method: 'post',
    path: `${env}/workspace-volumes`,
    summary: 'Create (idempotently) a Workspace volume bound to the Environment',
    security,
    request: { params: environmentParams, body: body(volumeBody) },
    responses: {
      201: json(volumeSchema, 'Created'),
      200: json(volumeSchema, 'Already created under this key'),
      ...problems,
    },
  }),
  provision: createRoute({
    method: 'post',
    path: `${env}/sandbox/provision`,
    summary: 'Reserve a lease and provision the selected provider',
    security,
    request: { params: environmentParams, body: body(provisionBody) },
    responses: {
      202: json(leaseSchema, 'The lease, provisioning (or the same lease on replay)'),
      ...problems,
      422: problem('The run selection has no or several exclusive candidates'),
    },
  }),
  inspect: createRoute({
    method: 'get',
    path: `${env}/sandbox`,
    summary:
      'Inspect the current lease; readyForDispatch needs exact observation and fresh network verification',
    security,
    request: { params: environmentParams, query: inspectQuery },
    responses: {
      200: json(inspectSchema, 'The lease and its readiness'),
      ...problems,
      503: problem('Too many waiting requests in this process; ask again without wait'),
    },
  }),
  attempts: createRoute({
    method: 'get',
    path: `${env}/sandbox/v1/operations/{operationId}/provider-attempts`,
    summary: "The operation's durable provider attempts, unresolved ones included",
    security,
    request: {
      params: environmentParams.extend({
        operationId: z
          .string()
          .regex(/^op_[a-z2-7]{32}$/, 'is not an operation ID')
          .openapi({ param: { name: 'operationId', in: 'path' } }),
      }),
    },
    responses: {
      200: json(
        z.object({ operationId: z.string(), attempts: z.array(attemptSchema) }),
        'Attempts, oldest first',
      ),
      ...problems,
    },
  }),
  abandon: createRoute({
    method: 'post',
    path: `${env}/sandbox/abandon`,
    summary: 'Abandon the current resource generation: fence first, then release',
    security,
    request: { params: environmentParams, body: body(abandonBody) },
    responses: { 202: json(leaseSchema, 'Releasing under a new fencing generation'), ...problems },
  }),
  renew: createRoute({
    method: 'post',
    path: `${env}/sandbox/renew`,
    summary: 'Extend the Active, unexpired lease by the configured time to live (renew attempt first)',
    security,
    request: { params: environmentParams, body: body(renewBody) },
    responses: {
      200: json(renewSchema, 'Renewed: the provider confirmed, the lease expires later (or a replay)'),
      202: json(renewSchema, 'The renew attempt has not answered yet; ask again with the same key'),
      ...problems,
    },
  }),
  reconcile: createRoute({
    method: 'post',
    path: `${env}/sandbox/reconcile`,
    summary:
      'Recover an interrupted operation through an exact listOwned, and release at most one pending late resource',
    security,
    request: { params: environmentParams, body: body(reconcileBody) },
    responses: {
      202: json(reconcileSchema, 'Reconciliation started'),
      200: json(reconcileSchema, 'Nothing to reconcile: the lease as it stands (terminal: its result)'),
      ...problems,
    },
  }),
  cleanups: createRoute({
    method: 'get',
    path: `${env}/sandbox/v1/late-resource-cleanups`,
    summary: 'Retained late-resource cleanup records with their exact attempt, claim and receipt state',
    security,
    request: { params: environmentParams },
    responses: {
      200: json(z.object({ cleanups: z.array(cleanupSchema) }), 'Cleanup records, oldest first'),
      ...problems,
    },
  }),
};

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/**
 * What a describe saw, and nothing else: rows written before the one attempt runner held the whole
 * provider answer, owner binding and owner hash included, which an answer never shows.
 */
function describeReceiptView(receipt: unknown): unknown {
  if (typeof receipt !== 'object' || receipt === null) return receipt;
  const r = receipt as { present?: unknown; phase?: unknown; finished?: unknown; resource?: unknown };
  if (r.present !== true) return { present: r.present ?? null };
  const resource = (typeof r.resource === 'object' && r.resource !== null ? r.resource : r) as {
    phase?: unknown;
    finished?: unknown;
  };
  const finished = resource.finished;
  return {
    present: true,
    phase: resource.phase ?? null,
    finished:
      typeof finished === 'object' && finished !== null
        ? ((finished as { reason?: unknown }).reason ?? null)
        : (finished ?? null),
  };
}

const attemptView = (a: AttemptRow) => ({
  attemptId: a.attemptId,
  kind: a.kind,
  state: a.state,
  lifecycleGeneration: a.lifecycleGeneration,
  resourceGeneration: a.resourceGeneration,
  providerFence: a.providerFence,
  fencingGeneration: a.fencingGeneration,
  requestFingerprint: a.requestFingerprint,
  createdAt: new Date(a.createdAt).toISOString(),
  dispatchedAt: iso(a.dispatchedAt),
  deadlineAt: iso(a.deadlineAt),
  resolvedAt: iso(a.resolvedAt),
  dispatchCount: a.dispatchCount,
  resolution: a.resolution,
  error: a.error,
  receipt: a.kind === 'describe' ? describeReceiptView(a.receipt) : a.receipt,
  lateResult: a.lateResult ?? null,
  lateResultAt: iso(a.lateResultAt),
});

export function sandboxRoutes(service: SandboxService, workspaces: WorkspaceService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });

  app.openapi(routes.volume, async (c) => {
    const { created, volume } = await workspaces.createVolume(
      c.var.principal,
      c.req.valid('param'),
      c.req.valid('json').idempotencyKey,
    );
    return created ? c.json(volume, 201) : c.json(volume, 200);
  });

  app.openapi(routes.provision, async (c) =>
    c.json(await service.provision(c.var.principal, c.req.valid('param'), c.req.valid('json')), 202),
  );

  app.openapi(routes.inspect, async (c) =>
    c.json(
      await service.inspect(
        c.var.principal,
        c.req.valid('param'),
        c.req.valid('query').networkPolicyGeneration,
        waitOptionsOf(c.req.valid('query')),
      ),
      200,
    ),
  );

  app.openapi(routes.attempts, async (c) => {
    const { operationId, ...address } = c.req.valid('param');
    const attempts = await service.attempts(c.var.principal, address, operationId);
    return c.json({ operationId, attempts: attempts.map(attemptView) }, 200);
  });

  app.openapi(routes.abandon, async (c) =>
    c.json(await service.abandon(c.var.principal, c.req.valid('param'), c.req.valid('json')), 202),
  );

  app.openapi(routes.renew, async (c) => {
    const { expectedResourceGeneration, ...rest } = c.req.valid('json');
    const renewed = await service.renew(c.var.principal, c.req.valid('param'), {
      ...rest,
      resourceGeneration: expectedResourceGeneration,
    });
    return renewed.renewal.state === 'Pending' ? c.json(renewed, 202) : c.json(renewed, 200);
  });

  app.openapi(routes.reconcile, async (c) => {
    const { started, lease, lateResourceCleanup, networkPolicy } = await service.reconcile(
      c.var.principal,
      c.req.valid('param'),
      c.req.valid('json'),
    );
    const answer = { ...lease, lateResourceCleanup, networkPolicy };
    return started ? c.json(answer, 202) : c.json(answer, 200);
  });

  app.openapi(routes.cleanups, async (c) =>
    c.json({ cleanups: await service.cleanups(c.var.principal, c.req.valid('param')) }, 200),
  );

  return app;
}
