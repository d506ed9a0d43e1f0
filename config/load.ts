import type { z } from 'zod';
import { ConfigError, type ConfigProblem } from './errors.ts';
import { displayValue } from './redact.ts';
import { envSchema } from './schema.ts';
import type { Config } from './types.ts';

/** Validates the environment; throws ConfigError naming every bad or missing variable at once. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const result = envSchema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => toProblem(issue, env)));
}

function toProblem(issue: z.core.$ZodIssue, env: Record<string, string | undefined>): ConfigProblem {
  const variable = typeof issue.path[0] === 'string' ? issue.path[0] : '(environment)';
  const value = env[variable]?.trim();
  const shown = value === undefined || value === '' ? undefined : displayValue(variable, value);
  return {
    variable,
    reason: shown === undefined ? issue.message : `${issue.message}, got ${JSON.stringify(shown)}`,
  };
}
