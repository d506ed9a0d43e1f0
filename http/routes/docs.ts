// The API reference page (/docs) and the one script it loads, both served by this process: the page
// works without the Internet (an air-gapped cluster, a laptop on a train). The script is the Scalar
// standalone bundle of the installed @scalar/api-reference package; the production build copies it
// into dist/http/assets/ (scripts/build.ts), so the compiled server does not need the package at run
// time. Fonts stay the browser's own: Scalar's default fonts come from its CDN.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Scalar } from '@scalar/hono-api-reference';
import { Hono } from 'hono';
import type { AppEnv } from '../context.ts';
import { Problem, problemResponse } from '../problems.ts';

/** Where the build puts the bundle, relative to the http/ folder. */
export const SCALAR_BUNDLE_FILE = 'assets/scalar-standalone.js';
export const SCALAR_BUNDLE_ROUTE = '/docs/scalar.js';
/** The package the bundle comes from, as the report of a missing bundle names it. */
const SCALAR_BUNDLE_MODULE = '@scalar/api-reference/browser/standalone.js';

/** The copy in a build first, else the installed package; undefined when neither is there. */
async function readBundle(): Promise<Buffer | undefined> {
  const built = fileURLToPath(new URL(`../${SCALAR_BUNDLE_FILE}`, import.meta.url));
  const readable = (path: string) => readFile(path).catch(() => undefined);
  const copy = await readable(built);
  if (copy !== undefined) return copy;
  try {
    return await readable(createRequire(import.meta.url).resolve(SCALAR_BUNDLE_MODULE));
  } catch {
    return undefined;
  }
}

export function docsRoutes(openApiUrl: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // 3.5 MB, read on the first request that wants it and kept: most processes never serve it.
  let bundle: Promise<Buffer | undefined> | undefined;

  app.get(
    '/docs',
    Scalar({
      url: openApiUrl,
      pageTitle: 'Sandlot API',
      cdn: SCALAR_BUNDLE_ROUTE,
      withDefaultFonts: false,
      // Nothing the page does leaves the machine: no AI agent, no request proxy ("Test Request"
      // goes straight to this server), no telemetry, no toolbar (its Share and Deploy post the
      // document to Scalar's registry), no developer tools.
      agent: { disabled: true },
      proxyUrl: '',
      telemetry: false,
      showDeveloperTools: 'never',
      hideClientButton: true,
      // Newer than the integration's configuration type; the page reads it all the same.
      ...({ showToolbar: 'never' } as object),
    }),
  );
  app.get(SCALAR_BUNDLE_ROUTE, async (c) => {
    bundle ??= readBundle();
    const body = await bundle;
    if (body === undefined) {
      bundle = undefined;
      return problemResponse(
        new Problem(
          404,
          'docs-bundle-missing',
          'API reference script not installed',
          `install @scalar/api-reference (it provides ${SCALAR_BUNDLE_MODULE})`,
        ),
        c.req.path,
      );
    }
    return c.body(new Uint8Array(body), 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=3600',
    });
  });
  return app;
}
