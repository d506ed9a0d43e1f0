// Core's internal resume routes (docs/suspend-resume.md "Resume", docs/api.md "Resume prepare and
// verify"). Core calls them with the original actor's expiring bearer, kept as the actor. Bodies
// are validated strictly first (400); the configuration acknowledgment and an absent
// restoredWorkspace (prepare) are checked before any owner call (422). Every answer is no-store.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import {
  restoredWorkspaceSchema,
  resumePrepareRequestSchema,
  resumeVerifyRequestSchema,
} from '../../actors/resume/requests.ts';
import type { ResumeService } from '../../actors/resume/service.ts';
import type { SuspendActor } from '../../actors/suspend/open.ts';
import type { AppEnv } from '../context.ts';
import { commonProblems, json, problem } from '../schemas.ts';

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
      'resume-mount-mismatch, resume-tree-hash-mismatch (and the provision problems of the new lease)',
  ),
  422: problem('resume-configuration-missing, or (prepare) resume-restored-workspace-present'),
  502: problem("core-answer-refused: Core's answer broke the contract"),
  503: problem('runtime-core-unavailable, core-unavailable, or the AgentHost cannot be asked'),
};

const restored = restoredWorkspaceSchema.meta({ id: 'RestoredWorkspace' });
const count = z.number().int().nonnegative();

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
    summary: "Verify the restored Workspace: the new Host's tree hash equals the manifest's",
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
};

const actorOf = (c: Context<AppEnv>): SuspendActor => ({
  caller: { tenantId: c.var.principal.tenantId, subject: c.var.principal.subject },
  bearer: c.var.bearer,
});

export function runtimeResumeRoutes(service: ResumeService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/internal/runtime/resume/*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  app.openapi(routes.prepare, async (c) => {
    const prepared = await service.prepare(actorOf(c), c.req.valid('json'));
    return prepared.state === 'Prepared' ? c.json(prepared, 200) : c.json(prepared, 202);
  });
  app.openapi(routes.verify, async (c) => c.json(await service.verify(actorOf(c), c.req.valid('json')), 200));
  return app;
}
