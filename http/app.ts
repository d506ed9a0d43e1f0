// The Hono application: one sub-app per resource, one onError that turns every failure into
// problem+json, OpenAPI generated from the same zod schemas that validate requests.
import { contextFrom, inSpan, SpanKind } from '../lib/tracing.ts';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Services } from '../actors/services.ts';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { ProviderIdentity } from '../providers/provider.ts';
import { MAX_BODY_BYTES } from '../lib/limits.ts';
import type { Database } from '../store/db.ts';
import { requirePrincipal } from './auth/middleware.ts';
import { boundedBody } from './body-limit.ts';
import { RUN_SCOPED_ADMIN_PATHS, RUN_SCOPED_API_PATHS, runScope } from './auth/run-scope.ts';
import type { TokenVerifier } from './auth/verify.ts';
import type { AppEnv } from './context.ts';
import { errorHandler, invalidRequest } from './errors.ts';
import { Problem, problemResponse } from './problems.ts';
import { strictQuery } from './strict-query.ts';
import { adminRoutes } from './routes/admin.ts';
import { adminCoreRoutes, isSeedUpload } from './routes/admin-core.ts';
import { adminRuntimeCoreRoutes } from './routes/admin-runtime-core.ts';
import { adminRuntimeEventsRoutes } from './routes/admin-runtime-events.ts';
import { buildTestRoutes } from './routes/build-test.ts';
import { consoleRoutes } from './routes/console.ts';
import { docsRoutes } from './routes/docs.ts';
import { environmentRoutes } from './routes/environments.ts';
import { journalRoutes } from './routes/journal.ts';
import { placementRoutes } from './routes/placement.ts';
import { registerOperationsPaths, sandlotDocument } from './openapi-document.ts';
import { providerReportRoutes } from './routes/provider-reports.ts';
import { queueDashboardRoutes } from './routes/queue-dashboard.ts';
import { requestContext } from './request-context.ts';
import { runtimeProfileRoutes } from './routes/runtime-profiles.ts';
import { runtimeResumeRoutes } from './routes/runtime-resume.ts';
import { runtimeSuspendRoutes } from './routes/runtime-suspend.ts';
import { mark, timelineEnabled } from '../lib/timeline.ts';
import { sandboxRoutes } from './routes/sandbox.ts';

export interface AppDeps {
  /** Readiness probes it; only the embedded admin routes write through it. */
  db: Database;
  services: Services;
  verifier: TokenVerifier;
  logger: Logger;
  provider: ProviderIdentity;
  /** Admin routes exist only in embedded mode, where Sandlot stands in for Projects. */
  embedded: boolean;
  version?: string;
  /** HTTP latency by route and status (default: not measured). */
  metrics?: Pick<SandlotMetrics, 'httpSeconds'>;
  /** BullMQ queues for the dashboard at /admin/queues (absent: no Redis, no dashboard). */
  queues?: readonly Queue[];
}

export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(result.error, result.target);
    },
  });

  // The opt-in step timeline (lib/timeline.ts): when a request about an Environment arrived and
  // when its answer was ready.
  app.use(async (c, next) => {
    const key = timelineEnabled() ? environmentOfPath(c.req.path) : null;
    if (key === null) return next();
    const route = `${c.req.method} ${routeOfPath(c.req.path)}`;
    mark(key, `${route} received`);
    await next();
    mark(key, `${route} answered ${c.res.status}`);
  });

  // Request ID, the request's child logger, one access line and the latency histogram.
  // One server span per request, continuing the caller's `traceparent` when it sends one.
  app.use((c, next) =>
    inSpan(
      `${c.req.method} ${routeOfPath(c.req.path)}`,
      {
        kind: SpanKind.SERVER,
        parent: contextFrom(c.req.header('traceparent')),
        attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path },
      },
      async (span) => {
        await next();
        span.setAttribute('http.response.status_code', c.res.status);
      },
    ),
  );
  app.use(requestContext({ logger: deps.logger, ...(deps.metrics ? { metrics: deps.metrics } : {}) }));

  // Bodies are bounded before anything parses them (a declared or a streamed length alike). The
  // embedded Core seed upload (operator only) is bounded by its own route, at the seed limit.
  const jsonBodyLimit = boundedBody(MAX_BODY_BYTES, 'the body');
  app.use((c, next) =>
    deps.embedded && isSeedUpload(c.req.method, c.req.path) ? next() : jsonBodyLimit(c, next),
  );

  // The request's own logger, so a failure's line carries its request ID.
  app.onError((error, c) => errorHandler(c.var.logger ?? deps.logger)(error, c));
  app.notFound((c) =>
    problemResponse(
      new Problem(404, 'route-not-found', 'Not found', `no route for ${c.req.method} ${c.req.path}`),
    ),
  );

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await deps.db.query('SELECT 1');
      return c.json({ status: 'ready' });
    } catch {
      return problemResponse(new Problem(503, 'not-ready', 'Not ready', 'the database does not answer'));
    }
  });

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
  });
  registerOperationsPaths(app);
  // Built on the first request and kept: the routes are all registered by then.
  let document: ReturnType<typeof sandlotDocument> | undefined;
  app.get('/openapi.json', (c) => c.json((document ??= sandlotDocument(app, deps.version ?? '0.1.0'))));
  app.route('/', docsRoutes('/openapi.json'));

  const auth = requirePrincipal(deps.verifier);
  app.use('/api/*', auth);
  // A run-bound token acts only within its project and run (http/auth/run-scope.ts).
  for (const path of RUN_SCOPED_API_PATHS) app.use(path, runScope);
  // Core's internal runtime routes (suspend, resume): the same expiring bearer, kept as the actor.
  // (The provider report route under /internal/provider-lifecycle admits its callers itself.)
  app.use('/internal/runtime/*', auth);
  // After the token, before anything validates: a query parameter the route does not declare is 400.
  const query = strictQuery(app);
  for (const path of ['/api/*', '/internal/runtime/*']) app.use(path, query);
  app.route('/', environmentRoutes(deps.services.lifecycle, deps.services.environments));
  app.route('/', sandboxRoutes(deps.services.sandbox, deps.services.workspaces));
  app.route('/', placementRoutes(deps.services.placement));
  app.route('/', runtimeProfileRoutes(deps.services.runtimeProfiles));
  app.route('/', journalRoutes(deps.services.journal));
  app.route('/', buildTestRoutes(deps.services.buildTest));
  app.route(
    '/',
    runtimeSuspendRoutes(deps.services.suspend, deps.services.workspaceFlush, deps.services.placementRelease),
  );
  app.route('/', runtimeResumeRoutes(deps.services.resume, deps.services.resumeBootstrap));
  // Fails closed (503) in every mode until its admissions exist; outside /api, so no user token applies.
  app.route('/', providerReportRoutes());
  // Before the embedded admin routes: it answers its own paths (operator checked inside, either mode).
  if (deps.queues !== undefined) app.route('/', queueDashboardRoutes(deps.queues, deps.verifier));
  app.route('/', consoleRoutes({ verifier: deps.verifier, forward: (request) => app.fetch(request) }));
  if (deps.embedded) {
    app.use('/admin/*', auth);
    for (const path of RUN_SCOPED_ADMIN_PATHS) app.use(path, runScope);
    app.use('/admin/*', query);
    app.route('/', adminRoutes(deps.db, deps.provider));
    app.route('/', adminCoreRoutes(deps.db));
    app.route('/', adminRuntimeCoreRoutes(deps.db));
    app.route('/', adminRuntimeEventsRoutes(deps.db));
  }
  return app;
}

/** The Environment a request path names (`…/environments/<id>/…`), for the step timeline. */
function environmentOfPath(path: string): string | null {
  return /\/environments\/([^/?]+)/.exec(path)?.[1] ?? null;
}

/** The path below the Environment (`sandbox/provision`, `lifecycle`), for the step timeline. */
function routeOfPath(path: string): string {
  return /\/environments\/[^/?]+\/?(.*)$/.exec(path)?.[1] || 'environment';
}
