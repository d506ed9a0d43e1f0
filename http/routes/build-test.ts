// BuildTest routes on a leased sandbox (docs/build-test.md, docs/api.md "BuildTest"). In progress:
// after authentication each route validates its input (400) before anything else, then asks fresh
// authority for the caller's own Environment (403, 404), then answers 409 build-test-unavailable without an
// AcceptedBuildTestProfile, or 501 build-test-not-implemented with one. Nothing is written and no
// result is made up. The caller names a checkpoint and the binding it expects, never a command.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  checkpointRefSchema,
  journalAcknowledgmentSchema,
} from '../../actors/build-test/accepted-command.ts';
import type { BuildTestActor, BuildTestService } from '../../actors/build-test/service.ts';
import { generationSchema, identifierSchema } from '../../machines/environment-events.ts';
import type { Context } from 'hono';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, problem } from '../schemas.ts';

const commands = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test';
const security = [{ bearer: [] }];
const body = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const problems = {
  ...commonProblems,
  404: problem('No such Environment for this caller'),
  409: problem('build-test-unavailable: no AcceptedBuildTestProfile is configured; nothing changed'),
  501: problem('build-test-not-implemented: this Sandlot build does not run BuildTest commands yet'),
};

const operationParams = environmentParams.extend({
  operationId: identifierSchema.meta({ param: { name: 'operationId', in: 'path' }, example: 'op-cp-1' }),
});

/** The Sandbox lease the command must run on, exactly as the caller last saw it. */
const expectedBinding = z.strictObject({
  leaseOperationId: z.string().regex(/^op_[a-z2-7]{32}$/, 'is not an operation ID'),
  resourceGeneration: generationSchema,
  providerFence: generationSchema,
  workspace: z.strictObject({
    volumeId: identifierSchema,
    resourceGeneration: generationSchema,
    dataGeneration: generationSchema,
  }),
  networkPolicyGeneration: generationSchema,
});

export const buildTestCommandBody = z
  .strictObject({ checkpoint: checkpointRefSchema, expectedBinding })
  .meta({ id: 'BuildTestCommandRequest' });

export const acknowledgeBody = journalAcknowledgmentSchema.meta({ id: 'BuildTestJournalAcknowledgment' });

const bindingQuery = z.object({
  sessionId: identifierSchema.meta({ param: { name: 'sessionId', in: 'query' }, example: 'session-1' }),
  executionProfileReference: identifierSchema.meta({
    param: { name: 'executionProfileReference', in: 'query' },
    example: 'build-v2',
  }),
});

const inProgress = ' (in progress: answers 409 build-test-unavailable or 501 today)';

const routes = {
  bindingPreparation: createRoute({
    method: 'get',
    path: `${commands}/binding-preparation`,
    summary: `Validate the current Sandbox profile binding for a session, starting nothing${inProgress}`,
    security,
    request: { params: environmentParams, query: bindingQuery },
    responses: problems,
  }),
  create: createRoute({
    method: 'post',
    path: `${commands}/commands`,
    summary: `Resolve the accepted Core checkpoint and run its BuildTest operation${inProgress}`,
    security,
    request: { params: environmentParams, body: body(buildTestCommandBody) },
    responses: problems,
  }),
  read: createRoute({
    method: 'get',
    path: `${commands}/commands/{operationId}`,
    summary: `Read the persisted BuildTest operation${inProgress}`,
    security,
    request: { params: operationParams },
    responses: problems,
  }),
  reconcile: createRoute({
    method: 'post',
    path: `${commands}/commands/{operationId}/reconcile`,
    summary: `Reconcile the same BuildTest operation and intent${inProgress}`,
    security,
    request: { params: operationParams, body: body(buildTestCommandBody) },
    responses: problems,
  }),
  capture: createRoute({
    method: 'get',
    path: `${commands}/commands/{operationId}/workspace-capture`,
    summary: `The sealed version 2 output document, exact digest and length${inProgress}`,
    security,
    request: { params: operationParams },
    responses: problems,
  }),
  acknowledge: createRoute({
    method: 'post',
    path: `${commands}/commands/{operationId}/workspace-capture/acknowledge`,
    summary: `Save the Core-verified Events journal acknowledgment, then clean up${inProgress}`,
    security,
    request: { params: operationParams, body: body(acknowledgeBody) },
    responses: problems,
  }),
};

/** The caller and the bearer it presented; the bearer stays unprintable (PresentedBearer). */
const actorOf = (c: Context<AppEnv>): BuildTestActor => ({
  caller: { tenantId: c.var.principal.tenantId, subject: c.var.principal.subject },
  bearer: c.var.bearer,
});

export function buildTestRoutes(service: BuildTestService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });

  app.openapi(routes.bindingPreparation, (c) =>
    service.prepareBinding(actorOf(c), c.req.valid('param'), c.req.valid('query')),
  );
  app.openapi(routes.create, (c) => service.create(actorOf(c), c.req.valid('param'), c.req.valid('json')));
  app.openapi(routes.read, (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return service.read(actorOf(c), address, operationId);
  });
  app.openapi(routes.reconcile, (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return service.reconcile(actorOf(c), address, operationId, c.req.valid('json'));
  });
  app.openapi(routes.capture, (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return service.capture(actorOf(c), address, operationId);
  });
  app.openapi(routes.acknowledge, (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return service.acknowledge(actorOf(c), address, operationId, c.req.valid('json'));
  });
  return app;
}
