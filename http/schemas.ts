import { z } from '@hono/zod-openapi';
import { defaultListLimit, maxListLimit } from '../actors/environment-list.ts';
import { maxWaitMs } from '../actors/wait.ts';
import { MAX_INT32 } from '../lib/limits.ts';
import { identifierSchema, idempotencyKeySchema } from '../machines/environment-events.ts';
import { lifecycleStates, sandboxStates } from '../machines/environment-context.ts';

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

export const projectOnlyParams = z.object({
  projectId: identifierSchema.meta({ param: { name: 'projectId', in: 'path' }, example: 'checkout' }),
});

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

/**
 * An integer in a path or a query, from `min` to `max`. Only canonical decimal digits are one, so
 * text that Number() would also read (`1e3`, `0x1`, `+1`, `1.0`, ` 1`, `01`) is refused (400), not
 * taken for another number. Every integer in a path or query uses this schema.
 */
export function decimalInteger(min: number, max: number) {
  return z
    .string()
    .regex(/^(?:0|[1-9][0-9]*)$/, 'is not a decimal integer (digits only, no sign or leading zero)')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max });
}

/** `?wait=5s` (also `500ms`, or bare seconds) up to 30 s, and `after=<revision>`: a long-poll read. */
export const waitQuery = z.object({
  wait: z
    .string()
    .regex(/^(?:0|[1-9][0-9]{0,5})(?:ms|s)?$/, 'is not a duration such as 5s or 500ms')
    .transform((text) =>
      text.endsWith('ms') ? Number(text.slice(0, -2)) : Number(text.replace(/s$/, '')) * 1000,
    )
    .refine((ms) => ms <= maxWaitMs, `may be at most ${maxWaitMs / 1000}s`)
    .optional()
    .openapi({
      param: { name: 'wait', in: 'query' },
      description:
        'Wait up to this long (at most 30s) for the Environment revision to pass `after` before answering',
      example: '5s',
    }),
  after: decimalInteger(0, Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: 'after', in: 'query' },
      description: 'With wait: the revision the caller saw (default: the revision when the wait starts)',
      example: 3,
    }),
});

/** The service's wait options from the parsed query (undefined: answer now). */
export function waitOptionsOf(query: { wait?: number | undefined; after?: number | undefined }) {
  if (query.wait === undefined) return undefined;
  return query.after === undefined ? { waitMs: query.wait } : { waitMs: query.wait, after: query.after };
}

const booleanQuery = (name: string, description: string) =>
  z
    .enum(['true', 'false'], { message: 'is not true or false' })
    .transform((text) => text === 'true')
    .optional()
    .openapi({ param: { name, in: 'query' }, description, type: 'boolean' });

/** Filters and paging of an Environment list. */
export const listQuery = z.object({
  lifecycleState: z
    .enum(lifecycleStates)
    .optional()
    .openapi({ param: { name: 'lifecycleState', in: 'query' }, description: 'Only this lifecycle state' }),
  sandboxState: z
    .enum(sandboxStates)
    .optional()
    .openapi({
      param: { name: 'sandboxState', in: 'query' },
      description: "Only this state of the sandbox region (its current or last lease's state, or NoLease)",
    }),
  hasUnresolvedAttempts: booleanQuery(
    'hasUnresolvedAttempts',
    'Only Environments with (true) or without (false) unresolved provision or release attempts or an open reconciliation',
  ),
  hasPendingCleanups: booleanQuery(
    'hasPendingCleanups',
    'Only Environments with (true) or without (false) open late-resource cleanups',
  ),
  updatedSince: z.iso
    .datetime({ offset: true, message: 'is not an RFC 3339 date-time' })
    .transform((text) => new Date(text))
    .optional()
    .openapi({
      param: { name: 'updatedSince', in: 'query' },
      description: 'Only Environments changed at or after this instant',
      example: '2026-12-01T00:00:00Z',
    }),
  limit: decimalInteger(1, maxListLimit)
    .optional()
    .openapi({
      param: { name: 'limit', in: 'query' },
      description: `Page size (default ${defaultListLimit}, at most ${maxListLimit})`,
      example: defaultListLimit,
    }),
  cursor: z
    .string()
    .min(1)
    .max(512)
    .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor this server gave')
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' }, description: "The previous page's nextCursor" }),
});

export const environmentSummarySchema = z
  .object({
    environmentId: z.string(),
    projectId: z.string(),
    runId: z.string(),
    idempotencyKey: z.string(),
    lifecycleGeneration: z.number().int(),
    state: z.enum(lifecycleStates),
    sandboxState: z.enum(sandboxStates).nullable(),
    leaseExpiresAt: z.string().nullable(),
    unresolvedAttempts: z.number().int(),
    pendingCleanups: z.number().int(),
    quarantined: z.boolean(),
    revision: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('EnvironmentSummary');

export const environmentPageSchema = z
  .object({
    environments: z.array(environmentSummarySchema),
    nextCursor: z.string().nullable(),
  })
  .openapi('EnvironmentPage');
