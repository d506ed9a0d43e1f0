// The first middleware every request meets: it gives the request an ID (the caller's `x-request-id`
// when it is a plain token, a new UUID otherwise, echoed back either way), a child logger that puts
// that ID on every line logged for the request, one access line, and the latency histogram by the
// matched route pattern (`/api/.../environments/:environmentId/...`), never the raw path with IDs.
import { randomUUID } from 'node:crypto';
import { createMiddleware } from 'hono/factory';
import type { Context } from 'hono';
import { matchedRoutes, routePath } from 'hono/route';
import type { Logger } from 'pino';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { AppEnv } from './context.ts';

export const REQUEST_ID_HEADER = 'x-request-id';
/** A caller's ID is logged and echoed: a bounded, header- and log-safe alphabet, or we make our own. */
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(given: string | undefined): string {
  return given !== undefined && ACCEPTED_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The pattern of the endpoint the request matched (registered for a method; middleware is `ALL`),
 * even when a middleware answered first (a 401); else the pattern of whatever answered (a 404).
 */
function routeOf(c: Context): string {
  const endpoint = matchedRoutes(c).findLast((route) => route.method !== 'ALL');
  return endpoint?.path ?? (routePath(c) || 'unmatched');
}

export function requestContext(deps: { logger: Logger; metrics?: Pick<SandlotMetrics, 'httpSeconds'> }) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now();
    const requestId = requestIdOf(c.req.header(REQUEST_ID_HEADER));
    c.set('logger', deps.logger.child({ requestId }));
    await next();
    c.header(REQUEST_ID_HEADER, requestId);
    const seconds = (performance.now() - started) / 1000;
    const route = routeOf(c);
    const status = c.res.status;
    deps.metrics?.httpSeconds.observe({ method: c.req.method, route, status: String(status) }, seconds);
    const environmentId = c.req.param('environmentId');
    // Path only: query strings and headers may carry things that must never reach a log.
    c.var.logger.info(
      {
        method: c.req.method,
        path: c.req.path,
        route,
        status,
        ms: Math.round(seconds * 1000),
        ...(environmentId === undefined ? {} : { environmentId }),
      },
      'request',
    );
  });
}
