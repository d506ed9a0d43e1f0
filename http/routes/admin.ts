// Embedded-only administration: we stand in for the Projects and run-selection services. Mounted
// only in embedded mode, and only for operator tokens.
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import { createMiddleware } from 'hono/factory';
import { permissions } from '../../actors/ports.ts';
import { MAX_INT32, MAX_JSON_DEPTH, PRINTABLE_TEXT, jsonDepthWithin } from '../../lib/limits.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import type { ProviderIdentity } from '../../providers/provider.ts';
import type { Database } from '../../store/db.ts';
import { putGrant } from '../../store/grants.ts';
import { putNetworkPolicy } from '../../store/network-policies.ts';
import { putRunSelection } from '../../store/run-selections.ts';
import type { AppEnv } from '../context.ts';
import { Problem, conflict } from '../problems.ts';
import { commonProblems, decimalInteger, json, problem } from '../schemas.ts';

const security = [{ bearer: [] }];

const tenantProjectParams = z.object({
  tenantId: identifierSchema.meta({ param: { name: 'tenantId', in: 'path' }, example: 'acme' }),
  projectId: identifierSchema.meta({ param: { name: 'projectId', in: 'path' }, example: 'checkout' }),
});

const grantParams = tenantProjectParams.extend({
  subject: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^\s/]+$/, 'must not contain spaces or slashes')
    .regex(PRINTABLE_TEXT, 'must not contain control characters')
    .openapi({ param: { name: 'subject', in: 'path' }, example: 'alice' }),
});

const grantBody = z
  .strictObject({ permissions: z.array(z.enum(permissions)).max(3) })
  .openapi('GrantPermissions', { description: 'An empty list revokes the grant' });

const grantSchema = z
  .object({
    tenantId: z.string(),
    projectId: z.string(),
    subject: z.string(),
    permissions: z.array(z.string()),
  })
  .openapi('Grant');

const providerIdentitySchema = z
  .object({
    providerId: z.string(),
    adapterVersion: z.string(),
    optionsSchemaVersion: z.number().int(),
    optionsRevision: z.string(),
    hostingPattern: z.string(),
    capabilities: z.array(z.string()),
  })
  .openapi('ProviderIdentity');

const candidateSchema = z
  .strictObject({
    providerId: z.string().min(1).max(128),
    adapterVersion: z.string().min(1).max(64),
    optionsSchemaVersion: z.number().int().positive(),
    optionsRevision: z.string().min(1).max(64),
    hostingPattern: z.string().min(1).max(64),
    capabilities: z.array(z.string().min(1).max(64)).max(32),
    exclusive: z.boolean(),
  })
  .openapi('ProviderCandidate');

const selectionBody = z
  .strictObject({ candidates: z.array(candidateSchema).min(1).max(16) })
  .openapi('RunSelectionRequest');

const selectionSchema = z
  .object({
    tenantId: z.string(),
    projectId: z.string(),
    runId: z.string(),
    candidates: z.array(candidateSchema),
    selectionHash: z.string(),
  })
  .openapi('RunSelection');

const putGrantRoute = createRoute({
  method: 'put',
  path: '/admin/tenants/{tenantId}/projects/{projectId}/grants/{subject}',
  summary: "Set a subject's permissions on a project (embedded mode)",
  security,
  request: {
    params: grantParams,
    body: { required: true, content: { 'application/json': { schema: grantBody } } },
  },
  responses: { 200: json(grantSchema, 'The grant as stored'), ...commonProblems },
});

const providerRoute = createRoute({
  method: 'get',
  path: '/admin/provider',
  summary: "The configured provider's identity, to copy into a run selection",
  security,
  responses: { 200: json(providerIdentitySchema, 'Provider identity'), ...commonProblems },
});

const putSelectionRoute = createRoute({
  method: 'put',
  path: '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/selection',
  summary: "Write a run's immutable provider selection (embedded mode)",
  security,
  request: {
    params: tenantProjectParams.extend({
      runId: identifierSchema.meta({ param: { name: 'runId', in: 'path' }, example: 'run-42' }),
    }),
    body: { required: true, content: { 'application/json': { schema: selectionBody } } },
  },
  responses: {
    201: json(selectionSchema, 'Written'),
    200: json(selectionSchema, 'The identical selection was already written'),
    ...commonProblems,
    409: problem('A different selection is already written for this run'),
  },
});

/** A policy document as any registration takes it (this route and `sandlot network-policy register`). */
export const networkPolicyDocument = z
  .record(z.string(), z.unknown())
  .refine((p) => jsonDepthWithin(p, MAX_JSON_DEPTH), `must not nest deeper than ${MAX_JSON_DEPTH} levels`);

const networkPolicyBody = z.strictObject({ policy: networkPolicyDocument }).openapi('NetworkPolicyRequest', {
  description: 'The policy document (Cilium rules); immutable per generation',
});

const putNetworkPolicyRoute = createRoute({
  method: 'put',
  path: '/admin/tenants/{tenantId}/projects/{projectId}/network-policies/{generation}',
  summary: "Register a project's network policy generation (embedded mode)",
  security,
  request: {
    params: tenantProjectParams.extend({
      generation: decimalInteger(1, MAX_INT32).openapi({
        param: { name: 'generation', in: 'path' },
        example: 1,
      }),
    }),
    body: { required: true, content: { 'application/json': { schema: networkPolicyBody } } },
  },
  responses: {
    201: json(
      z.object({ tenantId: z.string(), projectId: z.string(), generation: z.number().int() }),
      'Registered',
    ),
    200: json(
      z.object({ tenantId: z.string(), projectId: z.string(), generation: z.number().int() }),
      'Already registered, identical',
    ),
    ...commonProblems,
    409: problem('A different policy is already registered under this generation'),
  },
});

/** The operator role claim, or 403 (the embedded admin routes and the queue dashboard). */
export const requireOperator = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.var.principal.operator) {
    throw new Problem(
      403,
      'operator-required',
      'Operator token required',
      'this route needs the operator role',
    );
  }
  await next();
});

export function adminRoutes(db: Database, provider: ProviderIdentity): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use('/admin/*', requireOperator);

  app.openapi(putGrantRoute, async (c) => {
    const params = c.req.valid('param');
    const granted = [...new Set(c.req.valid('json').permissions)].sort();
    await putGrant(db, { ...params, permissions: granted });
    c.var.logger.info({ ...params, permissions: granted, by: c.var.principal.subject }, 'grant written');
    return c.json({ ...params, permissions: granted }, 200);
  });

  app.openapi(providerRoute, (c) => c.json(provider, 200));

  app.openapi(putSelectionRoute, async (c) => {
    const params = c.req.valid('param');
    const { result, selection } = await putRunSelection(
      db,
      { ...params, candidates: c.req.valid('json').candidates },
      c.var.principal.subject,
    );
    if (result === 'conflict') {
      throw conflict(
        'run-selection-immutable',
        'Run selection is immutable',
        'a different selection is already written for this run',
        {
          selectionHash: selection.selectionHash,
        },
      );
    }
    c.header('cache-control', 'no-store');
    return result === 'created' ? c.json(selection, 201) : c.json(selection, 200);
  });

  app.openapi(putNetworkPolicyRoute, async (c) => {
    const params = c.req.valid('param');
    const result = await putNetworkPolicy(db, { ...params, policy: c.req.valid('json').policy });
    if (result === 'conflict') {
      throw conflict(
        'network-policy-immutable',
        'Network policy generation is immutable',
        'a different policy is registered under this generation',
      );
    }
    return result === 'created' ? c.json(params, 201) : c.json(params, 200);
  });

  return app;
}
