// The simulated provider's fault plan: what goes wrong, how often, and on which call. Read from
// configuration (SANDLOT_SIMULATED_FAULTS), so a mistake must be reported precisely at start-up
// rather than silently producing a run without the faults someone meant to test.
import { z } from 'zod';

export const providerOperations = ['provision', 'describe', 'listOwned', 'renew', 'release'] as const;
export type ProviderOperation = (typeof providerOperations)[number];

export const faultKinds = [
  'timeout-after-apply',
  'server-error',
  'lost-response',
  'duplicate-resource',
  'late-resource',
  'latency',
] as const;
export type FaultKind = (typeof faultKinds)[number];

/** Faults that only make sense where a resource is created. */
export const provisionOnlyFaults: ReadonlySet<FaultKind> = new Set(['duplicate-resource', 'late-resource']);

const rate = z.number().min(0).max(1);
const milliseconds = z.int().min(0).max(3_600_000);

const scriptEntrySchema = z
  .strictObject({
    operation: z.enum(providerOperations),
    /** 1-based: the nth call of that operation; omitted, every call. */
    call: z.int().min(1).optional(),
    fault: z.enum(faultKinds),
    ms: milliseconds.optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.operation !== 'provision' && provisionOnlyFaults.has(entry.fault)) {
      const message = `${entry.fault} only applies to provision, not ${entry.operation}`;
      ctx.addIssue({ code: 'custom', message, path: ['fault'] });
    }
    if (entry.fault === 'latency' && entry.ms === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a latency fault needs ms', path: ['ms'] });
    }
  });

export const faultPlanSchema = z.strictObject({
  latencyMs: z
    .strictObject({ min: milliseconds, max: milliseconds })
    .refine((range) => range.min <= range.max, { message: 'min must not exceed max' })
    .optional(),
  rates: z
    .strictObject({
      timeoutAfterApply: rate.optional(),
      serverError: rate.optional(),
      lostResponse: rate.optional(),
      duplicateResource: rate.optional(),
      lateResource: rate.optional(),
    })
    .optional(),
  script: z.array(scriptEntrySchema).optional(),
});

export type FaultPlan = z.infer<typeof faultPlanSchema>;
export type ScriptedFault = z.infer<typeof scriptEntrySchema>;

export class FaultPlanError extends Error {
  override readonly name = 'FaultPlanError';
  readonly code = 'invalid-fault-plan';
}

/** Parses and validates a JSON fault plan; every problem is named by its path in the error. */
export function parseFaultPlan(json: string): FaultPlan {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new FaultPlanError(`Simulated fault plan is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = faultPlanSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.');
      return `${path === '' ? '(plan)' : path}: ${issue.message}`;
    });
    throw new FaultPlanError(`Invalid simulated fault plan: ${problems.join('; ')}`);
  }
  return parsed.data;
}
