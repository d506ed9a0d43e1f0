// Embedded-only administration of the RuntimeEvents stand-in (actors/runtime-events/
// runtime-events-embedded.ts): the protected material Events would hold for a step's session
// event (the acknowledged server configuration a resume bootstraps with), stored by an operator so
// embedded mode and the demo can run a resume end to end. The body is the material itself, raw
// `application/octet-stream` bytes, bounded by the API's body limit (app.ts), which equals
// MAX_PROTECTED_MATERIAL_BYTES. A material is immutable: the same bytes again answer 200, other
// bytes under the same key 409. The answer is the acknowledgment naming it (SHA-256 and length).
// The object reference is private: it is never logged. Mounted only in embedded mode, only for
// operator tokens.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  MAX_PROTECTED_MATERIAL_BYTES,
  configurationAcknowledgmentSchema,
} from '../../actors/runtime-events/material.ts';
import { storeProtectedMaterial } from '../../actors/runtime-events/runtime-events-embedded.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import type { Database } from '../../store/db.ts';
import type { AppEnv } from '../context.ts';
import { Problem, conflict } from '../problems.ts';
import { commonProblems, json, problem } from '../schemas.ts';
import { requireOperator } from './admin.ts';

const security = [{ bearer: [] }];
const param = (name: string, example: string) =>
  identifierSchema.meta({ param: { name, in: 'path' }, example });
const materialParams = z.object({
  tenantId: param('tenantId', 'acme'),
  projectId: param('projectId', 'checkout'),
  runId: param('runId', 'run-42'),
  stepId: param('stepId', 'agent_1'),
  environmentId: z
    .string()
    .regex(/^env_[a-z2-7]{32}$/, 'is not an Environment ID')
    .meta({ param: { name: 'environmentId', in: 'path' }, example: `env_${'a'.repeat(32)}` }),
  sessionId: param('sessionId', 'session-1'),
  eventId: param('eventId', 'evt-1'),
  objectReference: configurationAcknowledgmentSchema.shape.objectReference.meta({
    param: { name: 'objectReference', in: 'path' },
    example: 'obj:config-1',
  }),
});

const acknowledgmentSchema = configurationAcknowledgmentSchema.meta({
  id: 'EventsConfigurationAcknowledgment',
  description: 'The acknowledgment naming the stored material (docs/suspend-resume.md)',
});

const putMaterialRoute = createRoute({
  method: 'put',
  path:
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}' +
    '/environments/{environmentId}/sessions/{sessionId}/events/{eventId}/protected-material/{objectReference}',
  summary: "Store a session event's protected material (embedded Events stand-in)",
  security,
  description:
    'The body is the material itself (a credential-free server configuration), sent as ' +
    `\`application/octet-stream\`: 1 to ${MAX_PROTECTED_MATERIAL_BYTES} raw bytes.`,
  request: { params: materialParams },
  responses: {
    201: json(acknowledgmentSchema, 'Stored'),
    200: json(acknowledgmentSchema, 'The same bytes were already stored'),
    ...commonProblems,
    409: problem('Other bytes are stored under this key'),
    413: problem(`The material exceeds ${MAX_PROTECTED_MATERIAL_BYTES} bytes`),
    415: problem('The body is not application/octet-stream'),
  },
});

export function adminRuntimeEventsRoutes(db: Database): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/admin/*', requireOperator);

  app.openapi(putMaterialRoute, async (c) => {
    const params = c.req.valid('param');
    if ((c.req.header('content-type') ?? '').split(';')[0]?.trim() !== 'application/octet-stream') {
      throw new Problem(
        415,
        'unsupported-media-type',
        'Unsupported media type',
        'send the material as application/octet-stream',
      );
    }
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.length === 0) {
      throw new Problem(400, 'invalid-request', 'Invalid request', 'the material is empty');
    }
    if (bytes.length > MAX_PROTECTED_MATERIAL_BYTES) {
      throw new Problem(
        413,
        'payload-too-large',
        'Payload too large',
        `the material exceeds ${MAX_PROTECTED_MATERIAL_BYTES} bytes`,
      );
    }
    const { tenantId, projectId, runId, stepId, environmentId, sessionId, eventId } = params;
    const ref = { tenantId, projectId, runId, stepId, environmentId };
    const { result, acknowledgment } = await storeProtectedMaterial(
      db,
      { ref, sessionId, eventId, objectReference: params.objectReference },
      bytes,
      c.var.principal.subject,
    );
    if (result === 'conflict') {
      throw conflict(
        'events-material-immutable',
        'Material is immutable',
        'other bytes are stored for this session event and object reference',
      );
    }
    c.var.logger.info(
      {
        ...ref,
        sessionId,
        eventId,
        sha256: acknowledgment.sha256,
        length: acknowledgment.length,
        by: c.var.principal.subject,
      },
      'events protected material stored',
    );
    return c.json(acknowledgment, result === 'created' ? 201 : 200);
  });

  return app;
}
