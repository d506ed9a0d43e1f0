// A query parameter a route does not declare is refused with 400 `invalid-request`, on every route
// of the OpenAPI document, as a body field it does not declare is: nothing a client sends is quietly
// ignored. The declared names come from the same route definitions that generate the document and
// validate the known parameters, so a new route follows the rule without doing anything.
import { z, type OpenAPIHono } from '@hono/zod-openapi';
import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from './context.ts';
import { badRequest } from './problems.ts';

type Declared = ReadonlyMap<string, ReadonlySet<string>>;

/** `GET /api/projects/:projectId/…` → the query parameter names that route declares. */
function declaredQueries(app: OpenAPIHono<AppEnv>): Declared {
  const declared = new Map<string, ReadonlySet<string>>();
  for (const definition of app.openAPIRegistry.definitions) {
    if (definition.type !== 'route') continue;
    const { method, path, request } = definition.route;
    const query = request?.query;
    if (query !== undefined && !(query instanceof z.ZodObject)) {
      throw new Error(`${method} ${path}: a query schema must be an object to list its parameters`);
    }
    const names = new Set(query === undefined ? [] : Object.keys(query.shape));
    declared.set(`${method.toUpperCase()} ${path.replaceAll(/\{(.+?)\}/g, ':$1')}`, names);
  }
  return declared;
}

/**
 * Refuses the first undeclared query parameter of a documented route. Read from `app` on the first
 * request, once every route is registered (createApp registers them all before it returns).
 */
export function strictQuery(app: OpenAPIHono<AppEnv>) {
  let declared: Declared | undefined;
  return createMiddleware<AppEnv>(async (c, next) => {
    declared ??= declaredQueries(app);
    const endpoint = matchedRoutes(c).findLast((route) => route.method !== 'ALL');
    const known = endpoint === undefined ? undefined : declared.get(`${endpoint.method} ${endpoint.path}`);
    if (known !== undefined) {
      const unknown = [...new Set(new URL(c.req.url).searchParams.keys())].filter((name) => !known.has(name));
      if (unknown.length > 0) {
        const message = 'is not a query parameter of this route';
        throw badRequest('invalid-request', 'Invalid request', `query ${unknown[0]}: ${message}`, {
          errors: unknown.map((name) => ({ location: 'query', path: name, message })),
        });
      }
    }
    await next();
  });
}
