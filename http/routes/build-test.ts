// BuildTest routes on a leased sandbox (docs/build-test.md, docs/api.md "BuildTest"). After
// authentication each route validates its input (400) before anything else, then asks fresh
// authority for the caller's own Environment (403, 404), then answers 409 build-test-unavailable
// without an AcceptedBuildTestProfile (501 build-test-not-implemented on a provider that cannot run
// the Pods yet). The caller names a checkpoint and the binding it expects, never a command. Every
// answer is no-store.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  checkpointRefSchema,
  journalAcknowledgmentSchema,
} from '../../actors/build-test/accepted-command.ts';
import { OPERATION_LIST_LIMIT, type BuildTestService } from '../../actors/build-test/service.ts';
import type { BuildTestOperationResult } from '../../actors/build-test/operation-view.ts';
import { generationSchema, identifierSchema } from '../../machines/environment-events.ts';
import type { Context } from 'hono';
import type { AppEnv } from '../context.ts';
import { commonProblems, environmentParams, problem } from '../schemas.ts';
import { actorOf } from './actor.ts';

const commands = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test';
const security = [{ bearer: [] }];
const body = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const problems = {
  ...commonProblems,
  404: problem('No such Environment, operation or checkpoint for this caller'),
  409: problem(
    'build-test-unavailable (no AcceptedBuildTestProfile), or a refusal that changed nothing: ' +
      'build-test-no-active-lease, build-test-binding-mismatch, build-test-operation-conflict, ' +
      'build-test-command-changed, build-test-command-not-admitted, build-test-reconcile-mismatch, ' +
      'build-test-no-capture, build-test-acknowledgment-mismatch, -conflict or -unverified',
  ),
  422: problem('build-test-checkpoint-mismatch: the checkpoint names another tenant, project or run'),
  501: problem('build-test-not-implemented: this provider cannot run BuildTest Pods yet'),
};

const operationSchema = z
  .object({
    operationId: z.string(),
    environmentId: z.string(),
    checkpoint: z.record(z.string(), z.unknown()),
    version: z.number().int(),
    acceptedCommandHash: z.string(),
    requestFingerprint: z.string(),
    profileHash: z.string(),
    binding: z.record(z.string(), z.unknown()),
    state: z.enum(['Running', 'ReconciliationRequired', 'Succeeded', 'Failed', 'Interrupted']),
    step: z.enum(['command', 'collect', 'cleanup']).nullable(),
    pods: z.object({
      command: z.record(z.string(), z.unknown()).nullable(),
      collector: z.record(z.string(), z.unknown()).nullable(),
    }),
    preparation: z.record(z.string(), z.unknown()).nullable(),
    exitCode: z.number().int().nullable(),
    log: z.record(z.string(), z.unknown()).nullable(),
    collectorReceipt: z.record(z.string(), z.unknown()).nullable(),
    capture: z.object({ sha256: z.string(), length: z.number().int() }).nullable(),
    error: z.record(z.string(), z.unknown()).nullable(),
    acknowledgment: z.record(z.string(), z.unknown()).nullable(),
    acknowledgedAt: z.string().nullable(),
    cleanedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'SandboxBuildTestOperation' });

const operationResult = z
  .object({ operation: operationSchema, replay: z.boolean() })
  .meta({ id: 'SandboxBuildTestOperationResult' });

const operationList = z
  .object({ operations: z.array(operationSchema) })
  .meta({ id: 'SandboxBuildTestOperationList' });

const json = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { 'application/json': { schema } },
});

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

const bindingPreparation = z
  .object({
    sessionId: z.string(),
    executionProfileReference: z.string(),
    profileHash: z.string(),
    versions: z.array(z.string()),
    binding: expectedBinding,
  })
  .meta({ id: 'BuildTestBindingPreparation' });

export const buildTestCommandBody = z
  .strictObject({ checkpoint: checkpointRefSchema, expectedBinding })
  .meta({ id: 'BuildTestCommandRequest' });

// The original command request beside the acknowledgment (the seed: "the original API request and
// exact Events journal acknowledgment"), so an acknowledgment is saved only by a caller naming the
// checkpoint and binding the operation was reserved with.
export const acknowledgeBody = z
  .strictObject({
    request: buildTestCommandBody,
    acknowledgment: journalAcknowledgmentSchema.meta({ id: 'BuildTestJournalAcknowledgment' }),
  })
  .meta({ id: 'BuildTestAcknowledgeRequest' });

const bindingQuery = z.object({
  sessionId: identifierSchema.meta({ param: { name: 'sessionId', in: 'query' }, example: 'session-1' }),
  executionProfileReference: identifierSchema.meta({
    param: { name: 'executionProfileReference', in: 'query' },
    example: 'build-v2',
  }),
});

const routes = {
  bindingPreparation: createRoute({
    method: 'get',
    path: `${commands}/binding-preparation`,
    summary: `Validate the current Sandbox profile binding for a session, starting nothing`,
    security,
    request: { params: environmentParams, query: bindingQuery },
    responses: { 200: json('The binding a command request names now', bindingPreparation), ...problems },
  }),
  list: createRoute({
    method: 'get',
    path: `${commands}/commands`,
    summary: `The Environment's BuildTest operations, newest first (at most ${OPERATION_LIST_LIMIT})`,
    security,
    request: { params: environmentParams },
    responses: {
      200: json(
        'Persisted operations on any of its leases, whether or not BuildTest is offered now',
        operationList,
      ),
      ...commonProblems,
      404: problem('No such Environment for this caller'),
    },
  }),
  create: createRoute({
    method: 'post',
    path: `${commands}/commands`,
    summary: `Resolve the accepted Core checkpoint and run its BuildTest operation`,
    security,
    request: { params: environmentParams, body: body(buildTestCommandBody) },
    responses: {
      200: json('The operation existed already (replay: true)', operationResult),
      202: json('Reserved; its steps run on the workers (replay: false)', operationResult),
      ...problems,
    },
  }),
  read: createRoute({
    method: 'get',
    path: `${commands}/commands/{operationId}`,
    summary: `Read the persisted BuildTest operation`,
    security,
    request: { params: operationParams },
    responses: { 200: json('The persisted operation', operationResult), ...problems },
  }),
  reconcile: createRoute({
    method: 'post',
    path: `${commands}/commands/{operationId}/reconcile`,
    summary: `Reconcile the same BuildTest operation and intent`,
    security,
    request: { params: operationParams, body: body(buildTestCommandBody) },
    responses: {
      200: json('Nothing to reopen (replay: true)', operationResult),
      202: json('The same step reopened (replay: false)', operationResult),
      ...problems,
    },
  }),
  capture: createRoute({
    method: 'get',
    path: `${commands}/commands/{operationId}/workspace-capture`,
    summary: `The sealed version 2 output document, exact digest and length`,
    security,
    request: { params: operationParams },
    responses: {
      200: {
        description: 'The sealed AWSCAPT2 document; x-sandlot-capture-sha256 and content-length are exact',
        content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } },
      },
      410: problem('build-test-capture-acknowledged: read the retained copy through Source Control'),
      ...problems,
    },
  }),
  acknowledge: createRoute({
    method: 'post',
    path: `${commands}/commands/{operationId}/workspace-capture/acknowledge`,
    summary: `Save the Core-verified Events journal acknowledgment, then clean up`,
    security,
    request: { params: operationParams, body: body(acknowledgeBody) },
    responses: {
      200: json('Acknowledged already with this acknowledgment (replay: true)', operationResult),
      202: json('Saved; the exact Pods are being deleted (replay: false)', operationResult),
      ...problems,
    },
  }),
};

export function buildTestRoutes(service: BuildTestService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });

  const answer = (c: Context<AppEnv>, result: BuildTestOperationResult, fresh = 202 as const) =>
    c.json(result, result.replay ? 200 : fresh);

  app.openapi(routes.bindingPreparation, async (c) => {
    const prepared = await service.prepareBinding(actorOf(c), c.req.valid('param'), c.req.valid('query'));
    return c.json({ ...prepared, versions: [...prepared.versions] }, 200);
  });
  app.openapi(routes.list, async (c) =>
    c.json({ operations: await service.list(actorOf(c), c.req.valid('param')) }, 200),
  );
  app.openapi(routes.create, async (c) =>
    answer(c, await service.create(actorOf(c), c.req.valid('param'), c.req.valid('json'))),
  );
  app.openapi(routes.read, async (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return c.json(await service.read(actorOf(c), address, operationId), 200);
  });
  app.openapi(routes.reconcile, async (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return answer(c, await service.reconcile(actorOf(c), address, operationId, c.req.valid('json')));
  });
  app.openapi(routes.capture, async (c) => {
    const { operationId, ...address } = c.req.valid('param');
    const capture = await service.capture(actorOf(c), address, operationId);
    // Streamed with its exact length; a stream that fails after the answer began (a mismatch found
    // at the end, the collector lost) destroys the connection, so the reader gets no whole document.
    const logger = c.var.logger;
    // Behind a Node server (cli/serve.ts), the connection itself; absent in-process (app.request).
    const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
    const cut = (error: unknown) => {
      logger.warn(
        { operationId, error: error instanceof Error ? error.message : String(error) },
        'workspace capture cut off after its answer began',
      );
      outgoing?.destroy();
      return outgoing !== undefined;
    };
    return c.body(streamOf(capture.chunks, cut), 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(capture.length),
      'x-sandlot-capture-sha256': capture.sha256,
    });
  });
  app.openapi(routes.acknowledge, async (c) => {
    const { operationId, ...address } = c.req.valid('param');
    return answer(c, await service.acknowledge(actorOf(c), address, operationId, c.req.valid('json')));
  });
  return app;
}

/**
 * A pull-driven byte stream of `chunks`: read as the client reads; a cancelled answer stops it. A
 * failure after the answer began goes to `cut`, which ends the connection itself (true) or leaves
 * the stream to fail (false: an in-process reader sees the error).
 */
function streamOf(
  chunks: AsyncIterable<Uint8Array>,
  cut: (error: unknown) => boolean,
): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: IteratorResult<Uint8Array, void>;
        try {
          next = await iterator.next();
        } catch (error) {
          if (cut(error)) controller.close();
          else controller.error(error);
          return;
        }
        if (next.done === true) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}
