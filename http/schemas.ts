import { z } from '@hono/zod-openapi';
import { MAX_INT32 } from '../lib/limits.ts';
import { identifierSchema, idempotencyKeySchema } from '../machines/environment-events.ts';
import { lifecycleStates } from '../machines/environment-context.ts';

export const problemSchema = z
  .object({
    type: z.string().openapi({ example: 'urn:sandlot:problem:lifecycle-generation-mismatch' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
  })
  .openapi('Problem');

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problemSchema } },
});

/** Problems every authenticated route can answer. */
export const commonProblems = {
  400: problem('The request is malformed or fails validation; nothing changed'),
  401: problem('Missing, expired or invalid bearer token'),
  403: problem('The caller lacks a permission on this project'),
} as const;

export { problem };

export const projectParams = z.object({
  projectId: identifierSchema.meta({ param: { name: 'projectId', in: 'path' }, example: 'checkout' }),
  runId: identifierSchema.meta({ param: { name: 'runId', in: 'path' }, example: 'run-42' }),
});

export const environmentParams = projectParams.extend({
  environmentId: z
    .string()
    .regex(/^env_[a-z2-7]{32}$/, 'is not an Environment ID')
    .openapi({
      param: { name: 'environmentId', in: 'path' },
      example: 'env_4x2mqb7o1c3p5r6s7t2u3v4w5y6z7a2b',
    }),
});

export const registerBody = z
  .strictObject({ idempotencyKey: idempotencyKeySchema.meta({ example: 'attempt-1' }) })
  .openapi('RegisterEnvironment');

export const releaseBody = z
  .strictObject({
    expectedLifecycleGeneration: z.number().int().positive().max(MAX_INT32).openapi({ example: 1 }),
    idempotencyKey: idempotencyKeySchema.meta({ example: 'release-1' }),
  })
  .openapi('ReleaseEnvironment');

export const lifecycleSchema = z
  .object({
    environmentId: z.string(),
    tenantId: z.string(),
    projectId: z.string(),
    runId: z.string(),
    lifecycleGeneration: z.number().int(),
    state: z.enum(lifecycleStates),
    revision: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('EnvironmentLifecycle');

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
