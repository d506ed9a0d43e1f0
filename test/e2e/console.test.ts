// The console in a real browser (headless Chromium from the system, test/support/browser.ts): an
// operator signs in with a token, finds the Environment in the list, opens it and watches it change
// while the test registers, provisions and releases it through the API, without a reload; an action
// the server refuses shows its problem+json. Every request the page makes, and every request the
// /docs page makes, stays on this server. SANDLOT_CONSOLE_SCREENSHOT=FILE keeps a screenshot.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { browserTestsRun, launchChromium } from '../support/browser.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

// Generous: a loaded 2-core machine; each wait ends as soon as the page shows the state.
const SHOWN_MS = 20_000;

describe.skipIf(!browserTestsRun)('the console in a browser', () => {
  let backend: BackendHandle;
  let h: Harness;
  let server: Server;
  let origin: string;
  let browser: Browser;
  const foreign: string[] = [];

  beforeAll(async () => {
    backend = await openBackend('postgres');
    h = await buildHarness(backend.db, { workers: { callTimeoutMs: 2_000 } });
    server = serve({ fetch: h.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await new Promise<void>((ready) => (server.listening ? ready() : server.once('listening', ready)));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => server?.close(done));
    await h?.close();
    await backend?.close();
  });

  /** A page whose every request is recorded when it goes anywhere but this server. */
  async function openPage(): Promise<Page> {
    const page = await browser.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(`${origin}/`) && !request.url().startsWith('data:'))
        foreign.push(request.url());
    });
    page.setDefaultTimeout(SHOWN_MS);
    return page;
  }

  async function signIn(page: Page, token: string): Promise<void> {
    await page.goto(`${origin}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/login');
    await page.fill('textarea[name=token]', token);
    await Promise.all([page.waitForURL(`${origin}/console`), page.click('button[type=submit]')]);
  }

  it('signs in, lists, shows one Environment live through provision and release, and shows a refusal', async () => {
    const page = await openPage();
    // A token that does not verify is refused on the sign-in page, and sets nothing.
    await page.goto(`${origin}/console/login`);
    await page.fill('textarea[name=token]', 'not-a-token');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('[role=alert]').textContent()).toContain('not valid');

    const s: Scenario = await setupScenario(h, { run: 'run-1', key: 'env-1' });
    await signIn(page, s.token);
    await page.fill('input[name=projectId]', 'checkout');
    await page.click('form.filters button[type=submit]');
    const row = page.locator(`tr[data-environment="${s.environmentId}"]`);
    await expect.poll(() => row.locator('td.state').textContent(), { timeout: SHOWN_MS }).toBe('Registered');

    // A filter that excludes it: the list says so.
    await page.selectOption('select[name=lifecycleState]', 'Released');
    await page.click('form.filters button[type=submit]');
    await page.locator('text=No Environment matches.').waitFor();
    await page.selectOption('select[name=lifecycleState]', '');
    await page.click('form.filters button[type=submit]');
    await row.waitFor();

    await row.locator('a').click();
    await page.locator(`h2:text("${s.environmentId}")`).waitFor();
    await page.locator('text=No sandbox lease.').waitFor();
    await page.locator('.state-box.active[data-state="lifecycle.Registered"]').waitFor();

    // Provisioned through the API while the page is open: the page follows without a reload.
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    await waitForLease(h, s, (lease) => lease['state'] === 'Active');
    const leaseState = page.locator('dl[aria-label=lease] dd[data-field=state]');
    await expect.poll(() => leaseState.textContent(), { timeout: SHOWN_MS }).toBe('Active');
    await page.locator('table[aria-label=attempts] tr[data-attempt-state]').first().waitFor();
    await page.locator('ol.journal li').nth(1).waitFor();
    const screenshot = process.env['SANDLOT_CONSOLE_SCREENSHOT'];
    if (screenshot !== undefined) await page.screenshot({ path: screenshot, fullPage: true });

    // Released through the API: lifecycle and lease follow.
    const released = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
    });
    expect([200, 202]).toContain(released.status);
    const lifecycleState = page.locator('dl[aria-label=environment] dd[data-field=lifecycle]');
    await expect.poll(() => lifecycleState.textContent(), { timeout: SHOWN_MS }).toBe('Released');
    await page.locator('.state-box.active[data-state="lifecycle.Released"]').waitFor();

    // Release again from the page, confirmed: the server refuses (generation 1 is gone), and the
    // page shows the problem it answered.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('section.actions button:text("Abandon")');
    const alert = page.locator('section.actions [role=alert]');
    await alert.waitFor();
    const shown = (await alert.textContent()) ?? '';
    expect(shown).toMatch(/^4\d\d /);
    expect(shown).toContain('"type"');
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('refuses the console API without the console header, and without a sign-in', async () => {
    const s = await setupScenario(h, { run: 'run-2', key: 'env-2' });
    const path = `${origin}/console/api/projects/checkout/environments`;
    const noHeader = await fetch(path, { headers: { cookie: `sandlot_console_token=${s.token}` } });
    expect(noHeader.status).toBe(403);
    expect(noHeader.headers.get('content-type')).toContain('application/problem+json');
    const signedOut = await fetch(path, { headers: { 'x-sandlot-console': '1' } });
    expect(signedOut.status).toBe(401);
    const page = await fetch(`${origin}/console`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/console/login');
    // The page's own list call, as the console makes it: the token's own rights, no-store.
    const listed = await fetch(path, {
      headers: { cookie: `sandlot_console_token=${s.token}`, 'x-sandlot-console': '1' },
    });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('cache-control')).toBe('no-store');
    expect((await json<{ environments: unknown[] }>(listed)).environments.length).toBeGreaterThan(0);
  });

  it('loads /docs with no request leaving this server', async () => {
    const page = await openPage();
    const before = foreign.length;
    await page.goto(`${origin}/docs`);
    await page.waitForLoadState('networkidle');
    expect(foreign.slice(before)).toEqual([]);
    await page.close();
  });
});
