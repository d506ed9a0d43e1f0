// The OpenAPI document at /openapi.json: the routes' own declarations (generated from the zod
// schemas that validate them), plus what the routes cannot say about themselves: the probes, the
// metrics listener and the provider-report route, the bearer requirement as the document's default,
// and one tag per operation so the reference page groups them by capability.
//
// Tags are given here, from the path, rather than on each route: a route added later lands in its
// group without anyone remembering to tag it, and `tagOf` answering nothing is a test failure
// (test/integration/openapi.test.ts), not a route in an unnamed group.
import { z, type OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from './context.ts';
import { providerReportsPath } from './routes/provider-reports.ts';
import { problem } from './schemas.ts';

export interface DocumentTag {
  name: string;
  description: string;
}

/** The groups, in the order the reference page shows them. */
export const documentTags: readonly DocumentTag[] = [
  { name: 'Lifecycle', description: 'Register, list, read and release Environments; the journal.' },
  { name: 'Sandbox', description: 'Provision, renew, abandon and reconcile the sandbox lease.' },
  { name: 'Placement', description: "Where the lease's sandbox runs." },
  { name: 'BuildTest', description: 'Commands run on the Workspace, and their captures.' },
  {
    name: 'Workspace, suspend and resume',
    description: 'Workspace volumes, the trusted flush, placement release, resume and bootstrap.',
  },
  { name: 'Runtime', description: "The AgentHost's runtime profiles and Workspace context." },
  { name: 'Admin', description: 'Embedded mode only: grants, run selection, policies, Core and Events.' },
  { name: 'Operations', description: 'Probes, metrics and provider reports; no user token.' },
];

/** The group of one operation, from its path; undefined for a path no rule names. */
export function tagOf(path: string): string | undefined {
  if (path.startsWith('/admin/')) return 'Admin';
  if (['/healthz', '/readyz', '/metrics', providerReportsPath].includes(path)) return 'Operations';
  if (path.startsWith('/internal/runtime/')) return 'Workspace, suspend and resume';
  if (!path.startsWith('/api/projects/')) return undefined;
  if (path.includes('/sandbox/build-test')) return 'BuildTest';
  if (path.includes('/sandbox/v1/placement') || path.includes('/sandbox/v1/internal/placement')) {
    return 'Placement';
  }
  if (path.includes('/workspace-volumes')) return 'Workspace, suspend and resume';
  if (path.includes('/runtime-bootstrap/')) return 'Runtime';
  if (path.includes('/sandbox')) return 'Sandbox';
  if (path.endsWith('/environments') || /\/environments\/\{environmentId\}\/[\w-]+$/.test(path)) {
    return 'Lifecycle';
  }
  return undefined;
}

const noToken: Record<string, string[]>[] = [];

/** Declares the routes app.ts answers outside the route modules (probes, metrics, reports). */
export function registerOperationsPaths(app: OpenAPIHono<AppEnv>): void {
  const registry = app.openAPIRegistry;
  registry.registerPath({
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process answers',
    security: noToken,
    responses: {
      200: {
        description: 'The process is up',
        content: { 'application/json': { schema: z.object({ status: z.literal('ok') }) } },
      },
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/readyz',
    summary: 'Readiness: the database answers',
    security: noToken,
    responses: {
      200: {
        description: 'Ready to serve',
        content: { 'application/json': { schema: z.object({ status: z.literal('ready') }) } },
      },
      503: problem('not-ready: the database does not answer'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics (on the metrics listener, not the API port)',
    description:
      'Served by the listener at SANDLOT_METRICS_HOST:SANDLOT_METRICS_PORT when SANDLOT_METRICS_PORT ' +
      'is set, outside the user JWT; the API port answers 404 for it (docs/operations.md).',
    security: noToken,
    responses: {
      200: {
        description: 'The Prometheus text exposition format',
        content: { 'text/plain; version=0.0.4': { schema: z.string() } },
      },
    },
  });
  registry.registerPath({
    method: 'post',
    path: providerReportsPath,
    summary: 'Provider lifecycle reports (closed until their admissions exist)',
    description:
      'Every request answers 503 provider-reports-unavailable before anything of it is read: ' +
      'provider identity authentication and Core interruption acknowledgement are not configured.',
    security: noToken,
    responses: { 503: problem('provider-reports-unavailable, naming what is missing') },
  });
}

type Document = ReturnType<OpenAPIHono<AppEnv>['getOpenAPI31Document']>;

/** The finished document: every operation tagged, the bearer scheme the default requirement. */
export function sandlotDocument(app: OpenAPIHono<AppEnv>, version: string): Document {
  const doc = app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Sandlot',
      version,
      description: 'Leases agent sandboxes. Every error is application/problem+json with a stable type.',
    },
    tags: [...documentTags],
    security: [{ bearer: [] }],
  });
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const tag = tagOf(path);
    if (tag === undefined) continue;
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (operation !== undefined) operation.tags = [tag];
    }
  }
  return doc;
}
