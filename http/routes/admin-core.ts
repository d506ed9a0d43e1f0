// Embedded-only administration of the Core stand-in (actors/build-test/core-embedded.ts): what Core
// and Events would hold for BuildTest, registered by an operator so that embedded mode and the demo
// can run a command end to end. Each write is immutable: an identical repeat answers 200, a
// different one 409. Mounted only in embedded mode, only for operator tokens.
//
// A seed is a raw octet-stream body bounded by the seed limit (67,188,876 bytes), not by the API's
// JSON body limit: app.ts leaves this one path to the route's own bound (isSeedUpload).
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import { boundedBody } from '../body-limit.ts';
import {
  MAX_SEED_BYTES,
  acceptedCommandBodySchema,
  acceptedCommandSchema,
  journalAcknowledgmentSchema,
  journalAdmissionBodySchema,
} from '../../actors/build-test/accepted-command.ts';
import {
  registerAcceptedCommand,
  registerAdmission,
  registerWorkspaceSeed,
} from '../../actors/build-test/core-embedded.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import type { Database } from '../../store/db.ts';
import type { AppEnv } from '../context.ts';
import { invalidRequest } from '../errors.ts';
import { Problem, conflict } from '../problems.ts';
import { commonProblems, json, problem } from '../schemas.ts';
import { requireOperator } from './admin.ts';

const security = [{ bearer: [] }];
const SEED_UPLOAD = /^\/admin\/tenants\/[^/]+\/projects\/[^/]+\/core\/workspace-seeds$/;

/** The one request app.ts exempts from the JSON body limit: this route bounds it itself. */
export function isSeedUpload(method: string, path: string): boolean {
  return method === 'POST' && SEED_UPLOAD.test(path);
}

const param = (name: string, example: string) =>
  identifierSchema.meta({ param: { name, in: 'path' }, example });
const projectParams = z.object({
  tenantId: param('tenantId', 'acme'),
  projectId: param('projectId', 'checkout'),
});
const checkpointParams = projectParams.extend({
  runId: param('runId', 'run-42'),
  stepId: param('stepId', 'build'),
  checkpointId: param('checkpointId', 'cp-1'),
});
const checkpointPath =
  '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/build-test/steps/{stepId}/checkpoints/{checkpointId}';

const seedSchema = z
  .object({ tenantId: z.string(), projectId: z.string(), sha256: z.string(), length: z.number().int() })
  .openapi('CoreWorkspaceSeed');
const commandSchema = z.record(z.string(), z.unknown()).openapi('CoreAcceptedCommand', {
  description: 'The accepted command as Core answers it (docs/build-test.md)',
});
const admissionSchema = z.record(z.string(), z.unknown()).openapi('CoreJournalAdmission', {
  description: 'The journal acknowledgment Events admitted (docs/build-test.md)',
});

const putSeedRoute = createRoute({
  method: 'post',
  path: '/admin/tenants/{tenantId}/projects/{projectId}/core/workspace-seeds',
  summary: 'Register a version 2 workspace seed (embedded Core stand-in)',
  security,
  description:
    'The body is the seed itself (a credential-free Git bundle), sent as `application/octet-stream`: ' +
    `1 to ${MAX_SEED_BYTES} raw bytes, registered by its SHA-256.`,
  request: { params: projectParams },
  responses: {
    201: json(seedSchema, 'Registered'),
    200: json(seedSchema, 'Already registered'),
    ...commonProblems,
    413: problem(`The seed exceeds ${MAX_SEED_BYTES} bytes`),
    415: problem('The body is not application/octet-stream'),
  },
});

const putCommandRoute = createRoute({
  method: 'put',
  path: checkpointPath,
  summary: "Register a checkpoint's accepted BuildTest command (embedded Core stand-in)",
  security,
  request: {
    params: checkpointParams,
    body: {
      required: true,
      content: {
        'application/json': { schema: acceptedCommandBodySchema.meta({ id: 'CoreAcceptedCommandRequest' }) },
      },
    },
  },
  responses: {
    201: json(commandSchema, 'Accepted'),
    200: json(commandSchema, 'The identical command was already accepted'),
    ...commonProblems,
    409: problem(
      'Another command is accepted for this checkpoint, the operation ID is taken, or the seed is missing',
    ),
  },
});

const putAdmissionRoute = createRoute({
  method: 'put',
  path: `${checkpointPath}/journal-admission`,
  summary: "Record the journal acknowledgment Events admitted for a checkpoint's operation (embedded)",
  security,
  request: {
    params: checkpointParams,
    body: {
      required: true,
      content: {
        'application/json': {
          schema: journalAdmissionBodySchema.meta({ id: 'CoreJournalAdmissionRequest' }),
        },
      },
    },
  },
  responses: {
    201: json(admissionSchema, 'Recorded'),
    200: json(admissionSchema, 'The identical acknowledgment was already recorded'),
    ...commonProblems,
    409: problem('Another acknowledgment is recorded, or the checkpoint has no such operation'),
  },
});

export function adminCoreRoutes(db: Database): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/admin/*', requireOperator);
  app.use(
    '/admin/tenants/:tenantId/projects/:projectId/core/workspace-seeds',
    boundedBody(MAX_SEED_BYTES, 'the seed'),
  );

  app.openapi(putSeedRoute, async (c) => {
    const params = c.req.valid('param');
    if ((c.req.header('content-type') ?? '').split(';')[0]?.trim() !== 'application/octet-stream') {
      throw new Problem(
        415,
        'unsupported-media-type',
        'Unsupported media type',
        'send the seed as application/octet-stream',
      );
    }
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.length === 0) throw new Problem(400, 'invalid-request', 'Invalid request', 'the seed is empty');
    const { result, sha256, length } = await registerWorkspaceSeed(db, {
      ...params,
      bytes,
      createdBy: c.var.principal.subject,
    });
    c.var.logger.info({ ...params, sha256, length, by: c.var.principal.subject }, 'core seed registered');
    return c.json({ ...params, sha256, length }, result === 'created' ? 201 : 200);
  });

  app.openapi(putCommandRoute, async (c) => {
    const checkpoint = c.req.valid('param');
    const parsed = acceptedCommandSchema.safeParse({ ...c.req.valid('json'), checkpoint });
    if (!parsed.success) throw invalidRequest(parsed.error, 'json');
    const result = await registerAcceptedCommand(db, parsed.data, c.var.principal.subject);
    if (result === 'conflict') {
      throw conflict(
        'core-command-immutable',
        'Accepted command is immutable',
        'another command is accepted for this checkpoint',
      );
    }
    if (result === 'operation-taken') {
      throw conflict(
        'core-operation-taken',
        'Operation ID taken',
        'another checkpoint holds this operation ID',
      );
    }
    if (result === 'seed-missing') {
      throw conflict(
        'core-seed-not-registered',
        'Seed not registered',
        'register the seed this command binds first',
      );
    }
    c.var.logger.info(
      { ...checkpoint, operationId: parsed.data.operationId, by: c.var.principal.subject },
      'core command accepted',
    );
    return c.json(parsed.data, result === 'created' ? 201 : 200);
  });

  app.openapi(putAdmissionRoute, async (c) => {
    const checkpoint = c.req.valid('param');
    const parsed = journalAcknowledgmentSchema.safeParse({ ...c.req.valid('json'), checkpoint });
    if (!parsed.success) throw invalidRequest(parsed.error, 'json');
    const result = await registerAdmission(db, parsed.data, c.var.principal.subject);
    if (result === 'conflict') {
      throw conflict(
        'core-admission-immutable',
        'Journal admission is immutable',
        'another acknowledgment is recorded for this operation',
      );
    }
    if (result === 'unknown-operation') {
      throw conflict(
        'core-operation-unknown',
        'Unknown operation',
        "the checkpoint's accepted command has no such operation",
      );
    }
    return c.json(parsed.data, result === 'created' ? 201 : 200);
  });

  return app;
}
