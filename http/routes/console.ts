// The operator console at /console: a small page (console/main.ts, bundled with preact) that lists
// Environments, shows one (the machine's regions with the current states, lease, fences, attempts,
// journal) live, and releases, abandons or reconciles with confirmation.
//
// Sign-in is the queue dashboard's: paste a token once at /console/login; it is verified and kept
// in an HttpOnly, SameSite=Strict cookie scoped to /console, so the page's script never holds it.
// The page talks to the API through /console/api/*, which forwards each request to the same route
// under /api/* with the cookie's token as its bearer, through the whole app again: every check a
// direct call meets (token, ReadProjects, run binding, validation) applies unchanged, with the
// token's own rights. Every /console/api request must carry `x-sandlot-console: 1`, a header no
// cross-site form can send. Every asset comes from this server: no CDN, no external request.
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Context } from 'hono';
import { lifecycleStates, sandboxStates } from '../../machines/environment-context.ts';
import { machineOutline } from '../../machines/machine-outline.ts';
import { AuthenticationError } from '../auth/authentication-error.ts';
import type { TokenVerifier } from '../auth/verify.ts';
import type { AppEnv } from '../context.ts';
import { Problem, UnauthenticatedProblem } from '../problems.ts';
import { consoleBundle } from './console-assets.ts';

export const CONSOLE_PATH = '/console';
const LOGIN_PATH = `${CONSOLE_PATH}/login`;
const API_PREFIX = `${CONSOLE_PATH}/api/`;
const COOKIE = 'sandlot_console_token';
export const CONSOLE_HEADER = 'x-sandlot-console';

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

const loginPage = (message = '') => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>Sandlot console: sign in</title></head>
<body style="font-family:sans-serif;max-width:34rem;margin:4rem auto">
<h1>Sandlot console</h1>
<p>Paste a token (a JWT this server accepts). The console acts with its rights: it lists and changes
only what the token may. In embedded mode: <code>npx sandlot token --tenant T --sub S</code>.</p>
${message === '' ? '' : `<p role="alert">${escapeHtml(message)}</p>`}
<form method="post" action="${LOGIN_PATH}">
<textarea name="token" rows="6" cols="60" required autocomplete="off" aria-label="token"></textarea><br>
<button type="submit">Sign in</button>
</form></body></html>`;

const consolePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandlot console</title>
<script type="module" src="${CONSOLE_PATH}/app.js"></script>
</head><body><div id="app"><p>Loading the console…</p></div></body></html>`;

const isSecure = (c: Context) =>
  new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

export interface ConsoleDeps {
  verifier: TokenVerifier;
  /** The whole app: a forwarded request meets every middleware a direct one does. */
  forward: (request: Request) => Response | Promise<Response>;
}

export function consoleRoutes(deps: ConsoleDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const principalOf = async (c: Context) => {
    const token = getCookie(c, COOKIE);
    if (token === undefined) return null;
    return deps.verifier.verify(`Bearer ${token}`).catch((error: unknown) => {
      if (error instanceof AuthenticationError) return null;
      throw error;
    });
  };

  app.get(LOGIN_PATH, (c) => c.html(loginPage(), 200, SECURITY_HEADERS));
  app.post(LOGIN_PATH, async (c) => {
    const token = (await c.req.parseBody())['token'];
    const trimmed = typeof token === 'string' ? token.trim() : '';
    const principal = await deps.verifier.verify(`Bearer ${trimmed}`).catch(() => null);
    if (principal === null) return c.html(loginPage('That token is not valid.'), 401, SECURITY_HEADERS);
    setCookie(c, COOKIE, trimmed, {
      path: CONSOLE_PATH,
      httpOnly: true,
      sameSite: 'Strict',
      secure: isSecure(c),
    });
    return c.redirect(CONSOLE_PATH, 303);
  });
  app.post(`${CONSOLE_PATH}/logout`, (c) => {
    deleteCookie(c, COOKIE, { path: CONSOLE_PATH });
    return c.redirect(LOGIN_PATH, 303);
  });

  app.get(CONSOLE_PATH, async (c) => {
    if ((await principalOf(c)) === null) return c.redirect(LOGIN_PATH, 303);
    return c.html(consolePage, 200, SECURITY_HEADERS);
  });
  app.get(`${CONSOLE_PATH}/`, (c) => c.redirect(CONSOLE_PATH, 308));
  app.get(`${CONSOLE_PATH}/app.js`, async (c) => {
    const bundle = await consoleBundle();
    if (bundle === null) {
      throw new Problem(
        503,
        'console-not-built',
        'Console bundle missing',
        'this install has neither a built console (npm run build) nor esbuild to bundle it',
      );
    }
    return c.body(bundle, 200, { ...SECURITY_HEADERS, 'content-type': 'text/javascript; charset=utf-8' });
  });

  // Who is signed in, and what the page draws: the machine's regions and the list filters' values.
  app.get(`${CONSOLE_PATH}/session`, async (c) => {
    const principal = await principalOf(c);
    if (principal === null) throw new UnauthenticatedProblem(`sign in at ${LOGIN_PATH}`);
    c.header('cache-control', 'no-store');
    return c.json({
      tenantId: principal.tenantId,
      subject: principal.subject,
      operator: principal.operator,
      machine: machineOutline(),
      lifecycleStates,
      sandboxStates,
    });
  });

  app.all(`${API_PREFIX}*`, async (c) => {
    if (c.req.header(CONSOLE_HEADER) !== '1') {
      throw new Problem(
        403,
        'console-header-required',
        'Console request header missing',
        `requests under ${API_PREFIX} must send ${CONSOLE_HEADER}: 1`,
      );
    }
    const token = getCookie(c, COOKIE);
    if (token === undefined) throw new UnauthenticatedProblem(`sign in at ${LOGIN_PATH}`);
    const url = new URL(c.req.url);
    url.pathname = `/api/${url.pathname.slice(API_PREFIX.length)}`;
    const headers = new Headers();
    for (const name of ['content-type', 'accept']) {
      const value = c.req.header(name);
      if (value !== undefined) headers.set(name, value);
    }
    headers.set('authorization', `Bearer ${token}`);
    const method = c.req.method;
    const body = method === 'GET' || method === 'HEAD' ? null : await c.req.arrayBuffer();
    return deps.forward(new Request(url, { method, headers, body }));
  });
  return app;
}
