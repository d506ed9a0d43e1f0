// Embedded-only administration of the RuntimeCore stand-in (actors/runtime-core/
// runtime-core-embedded.ts): what Core would hold for suspend and resume, registered by an operator
// so embedded mode and the demo can run the cycle end to end. An operation's terms, its saved
// evidence and a Runtime registration are immutable (identical repeat 200, different 409); only an
// operation's state moves, by compare-and-set on the state revision the operator read, forward
// along Reserved → Fenced → Committed → Completed or from a current state to Abandoned. Mounted
// only in embedded mode, only for operator tokens.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  moveRuntimeOperation,
  registerRuntimeOperation,
  registerRuntimeRegistration,
  saveRuntimeOperationEvidence,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import {
  runtimeOperationStates,
  runtimeOperationTermsSchema,
  runtimeRegistrationSchema,
  savedOperationEvidenceSchema,
} from '../../actors/runtime-core/runtime-operation.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import type { Database } from '../../store/db.ts';
import type { AppEnv } from '../context.ts';
import { conflict, notFound } from '../problems.ts';
import { commonProblems, json, problem } from '../schemas.ts';
import { requireOperator } from './admin.ts';

const security = [{ bearer: [] }];
const param = (name: string, example: string) =>
  identifierSchema.meta({ param: { name, in: 'path' }, example });
const stepParams = z.object({
  tenantId: param('tenantId', 'acme'),
  projectId: param('projectId', 'checkout'),
  runId: param('runId', 'run-42'),
  stepId: param('stepId', 'agent_1'),
  environmentId: z
    .string()
    .regex(/^env_[a-z2-7]{32}$/, 'is not an Environment ID')
    .meta({ param: { name: 'environmentId', in: 'path' }, example: `env_${'a'.repeat(32)}` }),
});
const operationParams = stepParams.extend({ operationId: param('operationId', 'op-suspend-1') });
const registrationParams = stepParams.extend({ registrationId: param('registrationId', 'reg-1') });
const stepPath =
  '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}';
const operationPath = `${stepPath}/operations/{operationId}`;

const body = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const answer = z.record(z.string(), z.unknown()).openapi('CoreRuntimeAdminAnswer', {
  description: 'What the stand-in now holds (docs/suspend-resume.md)',
});
const moveSchema = z.strictObject({
  fromRevision: z.number().int().positive(),
  to: z.enum(runtimeOperationStates),
});
const registrationBodySchema = runtimeRegistrationSchema.omit({ ref: true, registrationId: true });

const putOperationRoute = createRoute({
  method: 'put',
  path: operationPath,
  summary: 'Reserve a suspend or resume operation for a step (embedded Core stand-in)',
  security,
  request: {
    params: operationParams,
    body: body(runtimeOperationTermsSchema.meta({ id: 'CoreRuntimeOperationTerms' })),
  },
  responses: {
    201: json(answer, 'Reserved'),
    200: json(answer, 'The identical operation was already reserved'),
    ...commonProblems,
    409: problem('The operation ID holds other terms, or the step has another current operation'),
  },
});

const putEvidenceRoute = createRoute({
  method: 'put',
  path: `${operationPath}/saved-evidence`,
  summary: 'Save the evidence Core confirms for an operation (embedded Core stand-in)',
  security,
  request: {
    params: operationParams,
    body: body(savedOperationEvidenceSchema.meta({ id: 'CoreRuntimeSavedEvidence' })),
  },
  responses: {
    201: json(answer, 'Saved'),
    200: json(answer, 'The identical evidence was already saved'),
    ...commonProblems,
    404: problem('The step has no such operation'),
    409: problem('Other evidence is saved, or the operation is past Fenced'),
  },
});

const moveRoute = createRoute({
  method: 'post',
  path: `${operationPath}/state`,
  summary: "Move an operation's state from the revision read (embedded Core stand-in)",
  security,
  request: { params: operationParams, body: body(moveSchema.meta({ id: 'CoreRuntimeStateMove' })) },
  responses: {
    200: json(answer, 'Moved'),
    ...commonProblems,
    404: problem('The step has no such operation'),
    409: problem('The state revision is stale, the move is not allowed, or Committed lacks evidence'),
  },
});

const putRegistrationRoute = createRoute({
  method: 'put',
  path: `${stepPath}/registrations/{registrationId}`,
  summary: 'Register a Runtime for a step at its next generation (embedded Core stand-in)',
  security,
  request: {
    params: registrationParams,
    body: body(registrationBodySchema.meta({ id: 'CoreRuntimeRegistrationRequest' })),
  },
  responses: {
    201: json(answer, 'Registered'),
    200: json(answer, 'The identical registration already exists'),
    ...commonProblems,
    409: problem('The registration ID holds another registration, or the generation is not the next'),
  },
});

const refOf = (p: z.infer<typeof stepParams>) => ({
  tenantId: p.tenantId,
  projectId: p.projectId,
  runId: p.runId,
  stepId: p.stepId,
  environmentId: p.environmentId,
});

export function adminRuntimeCoreRoutes(db: Database): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/admin/*', requireOperator);

  app.openapi(putOperationRoute, async (c) => {
    const params = c.req.valid('param');
    const terms = c.req.valid('json');
    const ref = refOf(params);
    const result = await registerRuntimeOperation(
      db,
      { ref, operationId: params.operationId, terms },
      c.var.principal.subject,
    );
    if (result === 'conflict') {
      throw conflict(
        'core-runtime-operation-immutable',
        'Operation is immutable',
        'the operation ID holds other terms or another step',
      );
    }
    if (result === 'step-busy') {
      throw conflict('core-runtime-step-busy', 'Step busy', 'the step has another current operation');
    }
    c.var.logger.info(
      { ...ref, operationId: params.operationId, kind: terms.kind, by: c.var.principal.subject },
      'core runtime operation reserved',
    );
    return c.json({ ref, operationId: params.operationId, ...terms }, result === 'created' ? 201 : 200);
  });

  app.openapi(putEvidenceRoute, async (c) => {
    const params = c.req.valid('param');
    const evidence = c.req.valid('json');
    const result = await saveRuntimeOperationEvidence(db, refOf(params), params.operationId, evidence);
    if (result === 'unknown-operation') throw notFound('the step has no such operation');
    if (result === 'conflict') {
      throw conflict('core-runtime-evidence-immutable', 'Evidence is immutable', 'other evidence is saved');
    }
    if (result === 'not-current') {
      throw conflict(
        'core-runtime-evidence-too-late',
        'Operation past Fenced',
        'evidence is saved only while the operation is Reserved or Fenced',
      );
    }
    return c.json({ operationId: params.operationId, evidence }, result === 'created' ? 201 : 200);
  });

  app.openapi(moveRoute, async (c) => {
    const params = c.req.valid('param');
    const move = c.req.valid('json');
    const moved = await moveRuntimeOperation(
      db,
      refOf(params),
      params.operationId,
      move.fromRevision,
      move.to,
    );
    const { result } = moved;
    if (result === 'unknown-operation') throw notFound('the step has no such operation');
    if (result === 'stale-revision') {
      throw conflict(
        'core-runtime-state-stale',
        'State revision stale',
        'the operation moved since it was read',
      );
    }
    if (result === 'not-allowed') {
      throw conflict(
        'core-runtime-move-not-allowed',
        'Move not allowed',
        `the operation cannot move to ${move.to}`,
      );
    }
    if (moved.result !== 'moved') {
      throw conflict(
        'core-runtime-no-evidence',
        'No saved evidence',
        'Core commits only over saved evidence',
      );
    }
    const { stateRevision } = moved;
    c.var.logger.info(
      { operationId: params.operationId, to: move.to, stateRevision, by: c.var.principal.subject },
      'core runtime operation moved',
    );
    return c.json({ operationId: params.operationId, state: move.to, stateRevision }, 200);
  });

  app.openapi(putRegistrationRoute, async (c) => {
    const params = c.req.valid('param');
    const registration = {
      ref: refOf(params),
      registrationId: params.registrationId,
      ...c.req.valid('json'),
    };
    const result = await registerRuntimeRegistration(db, registration, c.var.principal.subject);
    if (result === 'conflict') {
      throw conflict(
        'core-runtime-registration-immutable',
        'Registration is immutable',
        'the registration ID holds another registration',
      );
    }
    if (result === 'generation-gap') {
      throw conflict(
        'core-runtime-generation-not-next',
        'Generation not next',
        "a new registration takes exactly the step's next generation",
      );
    }
    return c.json(registration, result === 'created' ? 201 : 200);
  });

  return app;
}
