// The queue dashboard at /admin/queues: operators only (bearer token or the sign-in cookie), in
// production mode too; its page and assets come from the installed package; absent without Redis.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeProduction, type Composed } from './observability-support.ts';

const silent = () => pino({ level: 'silent' });

describe('queue dashboard with Redis (production composition)', () => {
  let c: Composed;

  beforeAll(async () => {
    c = await composeProduction({ logger: silent() });
  });
  afterAll(async () => {
    await c?.close();
  });

  it('refuses a request without a token (401) and a non-operator token (403)', async () => {
    for (const path of ['/admin/queues', '/admin/queues/', '/admin/queues/api/queues']) {
      const anonymous = await c.request('GET', path);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ type: 'urn:sandlot:problem:unauthenticated' });
      const user = await c.request('GET', path, { token: c.user });
      expect(user.status).toBe(403);
      expect(await user.json()).toMatchObject({ type: 'urn:sandlot:problem:operator-required' });
    }
  });

  it('serves an operator the board, its queues, and its assets from the installed package (no CDN)', async () => {
    const slash = await c.request('GET', '/admin/queues/', { token: c.operator });
    expect(slash.status).toBe(308);
    expect(slash.headers.get('location')).toBe('/admin/queues');
    const page = await c.request('GET', '/admin/queues', { token: c.operator });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<base href="/admin/queues/"');
    expect(html).not.toMatch(/https?:\/\//);
    const scripts = [...html.matchAll(/src="(static\/js\/[^"]+)"/g)].map((m) => m[1] as string);
    const styles = [...html.matchAll(/href="(static\/css\/[^"]+)"/g)].map((m) => m[1] as string);
    expect(scripts.length).toBeGreaterThan(0);
    for (const asset of [...scripts, ...styles]) {
      const res = await c.request('GET', `/admin/queues/${asset}`, { token: c.operator });
      expect(res.status, asset).toBe(200);
      await res.arrayBuffer();
    }

    const api = await c.request('GET', '/admin/queues/api/queues', { token: c.operator });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: { name: string; readOnlyMode: boolean }[] };
    expect(body.queues.map((q) => q.name).sort()).toEqual(['effects', 'maintenance']);
    expect(body.queues.every((q) => q.readOnlyMode)).toBe(true);
  });

  it('lets an operator sign in once in a browser (HttpOnly cookie), and refuses a user there', async () => {
    const form = (token: string) =>
      c.sandlot.app.request('/admin/queues/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
    expect((await c.request('GET', '/admin/queues/login')).status).toBe(200);
    expect((await form(c.user)).status).toBe(403);
    expect((await form('not-a-token')).status).toBe(401);

    const signedIn = await form(c.operator);
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/admin/queues');
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\/admin\/queues/);
    const pair = cookie.split(';')[0] as string;
    const api = await c.request('GET', '/admin/queues/api/queues', { headers: { cookie: pair } });
    expect(api.status).toBe(200);
  });
});

describe('queue dashboard without Redis', () => {
  let c: Composed;

  beforeAll(async () => {
    c = await composeProduction({ logger: silent(), redis: false });
  });
  afterAll(async () => {
    await c?.close();
  });

  it('is absent (404), whoever asks', async () => {
    for (const path of [
      '/admin/queues',
      '/admin/queues/',
      '/admin/queues/api/queues',
      '/admin/queues/login',
    ]) {
      expect((await c.request('GET', path, { token: c.operator })).status).toBe(404);
    }
  });
});
