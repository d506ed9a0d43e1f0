import { redactUrl } from './redact.ts';
import type { Config } from './types.ts';

/** Config's shape with every URL stripped of credentials: safe to log, not to run with. */
export type ConfigSummary = Readonly<Config>;

const redact = (value: string): string => redactUrl(value) ?? 'redacted';

export function describeConfig(config: Config): ConfigSummary {
  const { databaseUrl, redisUrl, projectsUrl, runSelectionUrl, auth, agentHostCaPem, serviceBackendCaPem } =
    config;
  return {
    ...config,
    ...(databaseUrl === undefined ? {} : { databaseUrl: redact(databaseUrl) }),
    ...(redisUrl === undefined ? {} : { redisUrl: redact(redisUrl) }),
    ...(projectsUrl === undefined ? {} : { projectsUrl: redact(projectsUrl) }),
    ...(runSelectionUrl === undefined ? {} : { runSelectionUrl: redact(runSelectionUrl) }),
    auth: { ...auth, ...(auth.jwksUrl === undefined ? {} : { jwksUrl: redact(auth.jwksUrl) }) },
    // Public, but long: the summary says only that a trust root is set.
    ...(agentHostCaPem === undefined ? {} : { agentHostCaPem: '(PEM bundle)' }),
    ...(serviceBackendCaPem === undefined ? {} : { serviceBackendCaPem: '(PEM bundle)' }),
  };
}
