import { z } from 'zod';

/** Path segments and identifiers chosen by callers: URL-safe, bounded. */
export const identifierSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    'must be 1-128 characters of A-Z a-z 0-9 . _ - starting alnum',
  );

export const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

export const environmentInputSchema = z.strictObject({
  environmentId: z.string(),
  tenantId: identifierSchema,
  projectId: identifierSchema,
  runId: identifierSchema,
});
export type EnvironmentInput = z.infer<typeof environmentInputSchema>;

export const releaseEventSchema = z.strictObject({
  type: z.literal('environment.release'),
  expectedLifecycleGeneration: z.number().int().positive(),
  idempotencyKey: idempotencyKeySchema,
});

export const environmentEventSchema = z.discriminatedUnion('type', [releaseEventSchema]);
export type EnvironmentEvent = z.infer<typeof environmentEventSchema>;

export interface EnvironmentContext {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  release: { idempotencyKey: string } | null;
}
