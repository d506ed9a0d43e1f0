// POST /internal/provider-lifecycle/reports: where providers will report what happened to a
// sandbox (interrupted, terminated, relocated). It fails closed: until provider identity
// authentication and Core's interruption acknowledgement are both admitted, every request is a 503
// `provider-reports-unavailable` problem, answered before anything of the request is read (no
// body, no token: a user's JWT is not a way in), so nothing is parsed, recorded or reconciled.
// The durable record and its reconciliation exist already (actors/sandbox/provider-reports.ts) and are
// tested directly; this route is not in the OpenAPI document, which lists the public API only.
import { OpenAPIHono } from '@hono/zod-openapi';
import { providerReportsAdmission, type ProviderReportsAdmission } from '../../config/types.ts';
import type { AppEnv } from '../context.ts';
import { Problem } from '../problems.ts';

export const providerReportsPath = '/internal/provider-lifecycle/reports';

/** What is missing before reports may be accepted; empty only once both are admitted. */
export function missingForReports(admission: ProviderReportsAdmission): string[] {
  return [
    admission.identityAuthentication === null ? 'provider identity authentication' : null,
    admission.coreInterruptionAck === null ? 'Core interruption acknowledgement' : null,
  ].filter((what): what is string => what !== null);
}

export function providerReportsUnavailable(missing: readonly string[]): Problem {
  return new Problem(
    503,
    'provider-reports-unavailable',
    'Provider reports unavailable',
    `provider lifecycle reports are not accepted until ${missing.join(' and ')} ${
      missing.length === 1 ? 'is' : 'are'
    } configured`,
    { missing },
  );
}

export function providerReportRoutes(
  admission: ProviderReportsAdmission = providerReportsAdmission,
): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.post(providerReportsPath, () => {
    // Both facts are `null` by type today, so this is every request. Admitting them means adding
    // the identity check and the call to `recordReport` after this line, not loosening it.
    throw providerReportsUnavailable(missingForReports(admission));
  });
  return app;
}
