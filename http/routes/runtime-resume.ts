// Core's internal resume routes (docs/suspend-resume.md "Resume" and "Bootstrap", docs/api.md
// "Resume prepare, verify and bootstrap"). Core calls them with the original actor's expiring bearer, kept as the actor. Bodies
// are validated strictly first (400); the configuration acknowledgment and an absent
// restoredWorkspace (prepare) are checked before any owner call (422). Every answer is no-store.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import {
  restoredWorkspaceSchema,
  resumePrepareRequestSchema,
  resumeVerifyRequestSchema,
} from '../../actors/resume/requests.ts';
import type { ResumeBootstrapService } from '../../actors/resume/bootstrap.ts';
import { resumeBootstrapRequestSchema } from '../../actors/resume/bootstrap-requests.ts';
import type { ResumeService } from '../../actors/resume/service.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, json, problem } from '../schemas.ts';
import { actorOf } from './actor.ts';

const body = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const problems = {
  ...commonProblems,
  404: problem("No such Environment for this caller (another tenant's step reads the same)"),
  409: problem(
    'A refusal: suspend-operation-not-current, suspend-operation-state, resume-operation-changed, ' +
      'resume-not-confirmed, resume-source-mismatch, resume-flush-evidence-mismatch, ' +
      'resume-lifecycle-moved, resume-network-refused, resume-placement-mismatch, ' +
      'resume-mount-mismatch, resume-tree-hash-mismatch, agenthost-workspace-resume-refused ' +
      '(and the provision problems of the new lease); ' +
      'bootstrap: resume-registration-mismatch, resume-attempt-unknown, resume-attempt-unresolved, ' +
      'resume-attempt-not-replaceable, resume-attempt-refused, resume-configuration-unavailable, ' +
      'resume-host-mismatch, resume-recovery-evidence-mismatch',
  ),
  422: problem('resume-configuration-missing, or (prepare) resume-restored-workspace-present'),
  502: problem("core-answer-refused: Core's answer broke the contract"),
  503: problem(
    'runtime-core-unavailable, core-unavailable, runtime-events-unavailable, events-unavailable, or the ' +
      'AgentHost cannot be asked (bootstrap: the attempt stays unresolved; repeat the same request)',
  ),
};

const restored = restoredWorkspaceSchema.meta({ id: 'RestoredWorkspace' });
const count = z.number().int().nonnegative();
const attemptView = z
  .object({
    attemptId: z.string(),
    attemptSeq: count,
    bootstrapId: z.string(),
    consumeId: z.string(),
    exchangeId: z.string(),
    resumeOperationId: z.string(),
    registrationId: z.string(),
    registrationGeneration: count,
    state: z.enum(['Delivering', 'Activated', 'Refused', 'StateLost']),
    deliveries: count,
  })
  .meta({ id: 'ResumeBootstrapAttempt' });

const routes = {
  prepare: createRoute({
    method: 'post',
    path: '/internal/runtime/resume/prepare',
    summary:
      'Advance the lifecycle once, reapply the network rules, and place a new Sandbox on the retained Workspace',
    security: [{ bearer: [] }],
    request: { body: body(resumePrepareRequestSchema.meta({ id: 'RuntimeWorkspaceResumeRequest' })) },
    responses: {
      200: json(
        z.object({ state: z.literal('Prepared'), restoredWorkspace: restored }),
        'The new lease, Workspace attachment and transition revision',
      ),
      202: json(
        z.object({
          state: z.literal('Provisioning'),
          operationId: z.string(),
          lifecycleGeneration: count,
          leaseOperationId: z.string(),
        }),
        'The new Sandbox is not Active yet: repeat the same request',
      ),
      ...problems,
    },
  }),
  verify: createRoute({
    method: 'post',
    path: '/internal/runtime/resume/verify',
    summary:
      "Verify the restored Workspace: the tree hash of the new Host's read-only Workspace resume equals the manifest's",
    security: [{ bearer: [] }],
    request: { body: body(resumeVerifyRequestSchema.meta({ id: 'RuntimeWorkspaceResumeVerifyRequest' })) },
    responses: {
      200: json(
        z
          .object({
            operationId: z.string(),
            restoredWorkspace: restored,
            contentProof: z.object({
              treeHash: z.string(),
              fileCount: count,
              byteCount: count,
              computedAt: z.string(),
            }),
            networkPolicyGeneration: count,
            verifiedAt: z.string(),
          })
          .meta({ id: 'ResumeReceipt' }),
        'The final receipt: content proof and the verified new network generation',
      ),
      ...problems,
    },
  }),
  bootstrap: createRoute({
    method: 'post',
    path: '/internal/runtime/resume/bootstrap',
    summary: 'Start the resumed Runtime on the new Host with a server-issued attempt',
    security: [{ bearer: [] }],
    request: { body: body(resumeBootstrapRequestSchema.meta({ id: 'RuntimeResumeBootstrapRequest' })) },
    responses: {
      200: json(
        z
          .object({
            outcome: z.enum(['Activated', 'StateLost']),
            attempt: attemptView,
            receipt: z.record(z.string(), z.unknown()).optional(),
            receiptSha256: z.string(),
            loss: z
              .object({
                observedAt: z.string(),
                sessionState: z.literal('Missing'),
                revokeRegistrationId: z.string(),
              })
              .optional(),
          })
          .meta({ id: 'ResumeBootstrapOutcome' }),
        "Activated (the Host's receipt), or StateLost: the acknowledged session is Missing now",
      ),
      ...problems,
    },
  }),
};

export function runtimeResumeRoutes(
  service: ResumeService,
  bootstrap: ResumeBootstrapService,
): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/internal/runtime/resume/*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  app.openapi(routes.prepare, async (c) => {
    const request = c.req.valid('json');
    const prepared = await service.prepare(actorOf(c, request.operation.ref), request);
    return prepared.state === 'Prepared' ? c.json(prepared, 200) : c.json(prepared, 202);
  });
  app.openapi(routes.verify, async (c) => {
    const request = c.req.valid('json');
    return c.json(await service.verify(actorOf(c, request.operation.ref), request), 200);
  });
  app.openapi(routes.bootstrap, async (c) => {
    const request = c.req.valid('json');
    return c.json(await bootstrap.bootstrap(actorOf(c, request.operation.ref), request), 200);
  });
  return app;
}
