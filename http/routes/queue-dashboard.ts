// The queue dashboard (bull-board) at /admin/queues: mounted only when Redis is configured, in both
// modes, and only for operators (the `operator` role claim, as the embedded admin routes require).
// A browser cannot attach a bearer token to the page's own requests, so an operator may also sign
// in once at /admin/queues/login: the token is checked and kept in an HttpOnly, SameSite=Strict
// cookie scoped to /admin/queues, and checked again on every request. The board is read-only:
// PostgreSQL, not the queue, is the record (a removed job is re-published by the outbox relay).
// Its page and assets come from the installed @bull-board/ui; the one external stylesheet (web
// fonts) is taken out, so the dashboard works offline and loads nothing from a CDN.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { AuthenticationError } from '../auth/authentication-error.ts';
import type { TokenVerifier } from '../auth/verify.ts';
import type { AppEnv } from '../context.ts';
import { UnauthenticatedProblem } from '../problems.ts';
import { requireOperator } from './admin.ts';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';
const LOGIN_PATH = `${QUEUE_DASHBOARD_PATH}/login`;
const COOKIE = 'sandlot_queues_token';
const EXTERNAL_STYLESHEET = /<link\b[^>]*href="https?:\/\/[^"]*"[^>]*>/gi;

const loginPage = (message = '') => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>Sandlot queues: sign in</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:4rem auto">
<h1>Sandlot queues</h1>
<p>Paste an operator token (a JWT with the <code>operator</code> role).</p>
${message === '' ? '' : `<p role="alert">${message}</p>`}
<form method="post" action="${LOGIN_PATH}">
<textarea name="token" rows="6" cols="60" required autocomplete="off"></textarea><br>
<button type="submit">Sign in</button>
</form></body></html>`;

/** The bearer header, or the sign-in cookie: verified the same way, every request. */
function authenticate(verifier: TokenVerifier) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const cookie = getCookie(c, COOKIE);
    const credential =
      c.req.header('authorization') ?? (cookie === undefined ? undefined : `Bearer ${cookie}`);
    try {
      c.set('principal', await verifier.verify(credential));
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      throw new UnauthenticatedProblem(
        `${error.reason}; send an operator token or sign in at ${LOGIN_PATH}`,
        {
          invalidToken: error.tokenPresent,
        },
      );
    }
    await next();
  });
}

/** bull-board's page asks for web fonts from a CDN; the page works without them. */
const offlinePage = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header('cache-control', 'no-store');
  if (!(c.res.headers.get('content-type') ?? '').startsWith('text/html')) return;
  const html = (await c.res.text()).replace(EXTERNAL_STYLESHEET, '');
  c.res = new Response(html, { status: c.res.status, headers: c.res.headers });
});

export function queueDashboardRoutes(queues: readonly Queue[], verifier: TokenVerifier): Hono<AppEnv> {
  const board = new HonoAdapter(serveStatic).setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'Sandlot queues' } },
  });

  const app = new Hono<AppEnv>();
  app.get(LOGIN_PATH, (c) => c.html(loginPage()));
  app.post(LOGIN_PATH, async (c) => {
    const token = (await c.req.parseBody())['token'];
    const principal = await verifier
      .verify(typeof token === 'string' ? `Bearer ${token.trim()}` : undefined)
      .catch(() => null);
    if (principal === null) return c.html(loginPage('That token is not valid.'), 401);
    if (!principal.operator) return c.html(loginPage('That token has no operator role.'), 403);
    const secure = new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
    setCookie(c, COOKIE, (token as string).trim(), {
      path: QUEUE_DASHBOARD_PATH,
      httpOnly: true,
      sameSite: 'Strict',
      secure,
    });
    return c.redirect(QUEUE_DASHBOARD_PATH, 303);
  });
  for (const path of [QUEUE_DASHBOARD_PATH, `${QUEUE_DASHBOARD_PATH}/*`]) {
    app.use(path, authenticate(verifier), requireOperator, offlinePage);
  }
  app.get(`${QUEUE_DASHBOARD_PATH}/`, (c) => c.redirect(QUEUE_DASHBOARD_PATH, 308));
  app.route(QUEUE_DASHBOARD_PATH, board.registerPlugin());
  return app;
}
