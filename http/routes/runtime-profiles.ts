// The runtime-bootstrap profile routes: resolve a source profile for the Environment's current
// sandbox (the path's profileId is the SOURCE profile ID), and read a resolved mapping back (the
// path's profileId is the DERIVED one), with its `/workspace` suffix: the profile's runtime
// Workspace context (actors/runtime-profiles/workspace-context.ts). All use the internal placement
// semantics: a token bound to exactly this project and run, and fresh ReadRunSelection. All answer
// `no-store`, errors too; none returns a credential or an option value.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import { PROFILE_ID } from '../../config/agenthost.ts';
import { PROFILE_ID_PATTERN } from '../../actors/runtime-profiles/copy.ts';
import type { RuntimeProfileService } from '../../actors/runtime-profiles/service.ts';
import type { ProfileMappingRow } from '../../store/runtime-profiles.ts';
import type { AppEnv } from '../context.ts';
import { badRequest } from '../problems.ts';
import { commonProblems, environmentParams, json, problem } from '../schemas.ts';

const env = '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}';
const honoEnv = '/api/projects/:projectId/runs/:runId/environments/:environmentId';

const paramOf = (pattern: RegExp, message: string, example: string) =>
  environmentParams.extend({
    profileId: z
      .string()
      .regex(pattern, message)
      .openapi({ param: { name: 'profileId', in: 'path' }, example }),
  });

const sourceParams = paramOf(PROFILE_ID, 'is not a source profile ID', 'codex-default');
const mappingParams = paramOf(
  PROFILE_ID_PATTERN,
  'is not a resolved runtime profile ID',
  `rp_${'a'.repeat(52)}`,
);

const mappingSchema = z
  .object({
    profileId: z.string(),
    sourceProfileId: z.string(),
    environmentId: z.string(),
    /** The receiver's HTTPS endpoint (its Service DNS name, never the Pod IP). */
    endpoint: z.string(),
    configureUrl: z.string(),
    audience: z.string(),
    placement: z.object({
      resourceId: z.string(),
      operationId: z.string(),
      lifecycleGeneration: z.number().int(),
      resourceGeneration: z.number().int(),
      providerFence: z.number().int(),
      podUid: z.string(),
      podIp: z.string(),
      serverName: z.string(),
      port: z.number().int(),
    }),
    pins: z.object({
      actor: z.string(),
      selectionHash: z.string(),
      sourceConfigurationHash: z.string(),
      profileHash: z.string(),
    }),
    /** The exact copied replacement profile: the source with only profileId and configureEndpoint replaced. */
    profile: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .openapi('RuntimeProfileMapping');

const resolvedSchema = mappingSchema
  .extend({ replayed: z.boolean().openapi({ description: 'The same placement resolved this before' }) })
  .openapi('ResolvedRuntimeProfile');

const resolveRoute = createRoute({
  method: 'post',
  path: `${env}/runtime-bootstrap/profiles/{profileId}/resolve`,
  summary:
    'Resolve a source runtime profile to an endpoint-bound copy for the current sandbox (run-bound token)',
  security: [{ bearer: [] }],
  // The body is empty or `{}`; it is checked by hand (see emptyBody), so none is declared.
  request: { params: sourceParams },
  responses: {
    200: json(resolvedSchema, 'The stored mapping (replayed when it existed already)'),
    ...commonProblems,
    403: problem('ReadRunSelection is missing, or the token is not bound to this project and run'),
    404: problem('No such Environment for this caller, or no such source profile'),
    409: problem(
      'No AgentHost configuration, no usable placement or endpoint, a changed selection, or a differing stored mapping',
    ),
    503: problem('The AgentHost live probe failed; nothing was stored'),
  },
});

const readRoute = createRoute({
  method: 'get',
  path: `${env}/runtime-bootstrap/profiles/{profileId}`,
  summary:
    'A resolved runtime profile, while its actor, selection, source configuration and endpoint still match',
  security: [{ bearer: [] }],
  request: { params: mappingParams },
  responses: {
    200: json(mappingSchema, 'The stored mapping'),
    ...commonProblems,
    403: problem('A permission or run binding is missing, or another actor resolved the profile'),
    404: problem('No such Environment, or no such profile for it'),
    409: problem(
      'The profile is stale (selection, endpoint or source configuration changed), or none is configured',
    ),
  },
});

const workspaceContextSchema = z
  .object({
    environmentId: z.string(),
    profileId: z.string(),
    /** The current Active lease the profile maps. */
    lease: z.object({
      operationId: z.string(),
      lifecycleGeneration: z.number().int(),
      resourceGeneration: z.number().int(),
      providerFence: z.number().int(),
      resourceId: z.string(),
    }),
    workspace: z.object({
      volumeId: z.string(),
      state: z.literal('Attached'),
      transitionRevision: z
        .number()
        .int()
        .openapi({ description: "The Workspace record's revision, held with the lease" }),
      resourceGeneration: z.number().int(),
      dataGeneration: z.number().int().nonnegative().openapi({ description: 'Metadata; zero is valid' }),
      /** The pinned Storage binding: no options, no release descriptor. */
      storage: z.object({
        providerId: z.string(),
        pvc: z.object({ namespace: z.string(), name: z.string(), uid: z.string() }),
      }),
      mount: z.object({ path: z.string(), readOnly: z.boolean() }),
    }),
    networkPolicyGeneration: z.number().int(),
  })
  .openapi('EnvironmentRuntimeWorkspaceContext');

const workspaceRoute = createRoute({
  method: 'get',
  path: `${env}/runtime-bootstrap/profiles/{profileId}/workspace`,
  summary:
    "The Workspace a resolved runtime profile's sandbox mounts, read with its lease under the owner lock",
  security: [{ bearer: [] }],
  request: { params: mappingParams },
  responses: {
    200: json(workspaceContextSchema, 'The runtime Workspace context'),
    ...commonProblems,
    403: problem('A permission or run binding is missing, or another actor resolved the profile'),
    404: problem('No such Environment, or no such profile for it'),
    409: problem(
      'The profile is stale, the lease moved, or the Workspace is not Attached to it exactly as recorded',
    ),
  },
});

function viewOf(m: ProfileMappingRow) {
  return {
    profileId: m.profileId,
    sourceProfileId: m.sourceProfileId,
    environmentId: m.environmentId,
    endpoint: m.endpoint,
    configureUrl: m.configureUrl,
    audience: m.audience,
    placement: {
      resourceId: m.resourceId,
      operationId: m.operationId,
      lifecycleGeneration: m.lifecycleGeneration,
      resourceGeneration: m.resourceGeneration,
      providerFence: m.providerFence,
      podUid: m.podUid,
      podIp: m.podIp,
      serverName: m.serverName,
      port: m.port,
    },
    pins: {
      actor: m.actor,
      selectionHash: m.selectionHash,
      sourceConfigurationHash: m.sourceConfigHash,
      profileHash: m.profileHash,
    },
    profile: m.profile,
    createdAt: m.createdAt.toISOString(),
  };
}

/** A resolve carries nothing: no body, or exactly `{}`. Anything else is refused, not ignored. */
function emptyBody(text: string): void {
  if (text.trim() === '') return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('malformed-request', 'Malformed request', 'the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length > 0) {
    throw badRequest('invalid-request', 'Invalid request', 'a resolve takes no body, or exactly {}');
  }
}

export function runtimeProfileRoutes(service: RuntimeProfileService): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use(`${honoEnv}/runtime-bootstrap/*`, async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
  });
  app.openapi(resolveRoute, async (c) => {
    const { profileId, ...address } = c.req.valid('param');
    emptyBody(await c.req.text());
    const resolved = await service.resolve(c.var.principal, address, profileId, c.req.raw.signal);
    return c.json({ ...viewOf(resolved.mapping), replayed: resolved.replayed }, 200);
  });
  app.openapi(readRoute, async (c) => {
    const { profileId, ...address } = c.req.valid('param');
    return c.json(viewOf(await service.read(c.var.principal, address, profileId)), 200);
  });
  app.openapi(workspaceRoute, async (c) => {
    const { profileId, ...address } = c.req.valid('param');
    return c.json(await service.workspace(c.var.principal, address, profileId), 200);
  });
  return app;
}
