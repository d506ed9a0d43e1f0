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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import { SimulatedBuildTestRunner } from '../../providers/simulated/build-test-runner.ts';
import { acceptVersion2 } from '../support/build-test-scenario.ts';
import { embeddedWorker, loadedProfile } from '../support/build-test-profile.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { gitSeed } from '../support/git-seed.ts';
import { browserTestsRun, launchChromium } from '../support/browser.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

// Generous: a loaded 2-core machine; each wait ends as soon as the page shows the state.
const SHOWN_MS = 20_000;
const DOCS_QUIET_MS = 60_000;

describe.skipIf(!browserTestsRun)('the console in a browser', () => {
  let backend: BackendHandle;
  let h: Harness;
  let server: Server;
  let origin: string;
  let browser: Browser;
  let stateDir: string;
  const foreign: string[] = [];

  beforeAll(async () => {
    backend = await openBackend('postgres');
    // BuildTest offered with the simulated Pods, so the page has an operation to show.
    stateDir = await mkdtemp(join(tmpdir(), 'sandlot-console-bt-'));
    const runner = new SimulatedBuildTestRunner({ db: backend.db, stateDir });
    const core = new EmbeddedCore(backend.db);
    h = await buildHarness(backend.db, {
      workers: { callTimeoutMs: 2_000 },
      buildTest: { offer: { profile: loadedProfile(), core, runner }, worker: embeddedWorker(runner, core) },
    });
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
    if (stateDir !== undefined) await rm(stateDir, { recursive: true, force: true });
  });

  /**
   * A page whose every request is recorded when it goes anywhere but this server, and refused there
   * and then: a request this machine cannot answer must fail the test by its name, not by hanging
   * a wait for the network to go quiet.
   */
  async function openPage(): Promise<Page> {
    const page = await browser.newPage();
    const elsewhere = (url: URL) => url.origin !== origin && url.protocol !== 'data:';
    page.on('request', (request) => {
      if (elsewhere(new URL(request.url()))) foreign.push(request.url());
    });
    await page.route(elsewhere, (route) => route.abort('blockedbyclient'));
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
    await page.locator('text=No BuildTest operations.').waitFor();
    await page.locator('text=No Workspace flushes.').waitFor();

    // A BuildTest command run through the API on the Active lease: the page lists the operation
    // and follows it to Succeeded.
    const checkpoint = { tenantId: 'acme', projectId: 'checkout', runId: 'run-1', stepId: 'build' };
    const seed = await gitSeed({ 'README.md': '# app\n' });
    await acceptVersion2(h.db, { ...checkpoint, checkpointId: 'cp-console' }, seed);
    const prepared = await h.request(
      'GET',
      `${s.base}/sandbox/build-test/binding-preparation?sessionId=session-1&executionProfileReference=build-v2`,
      { token: s.token },
    );
    expect(prepared.status).toBe(200);
    const command = await h.request('POST', `${s.base}/sandbox/build-test/commands`, {
      token: s.token,
      body: {
        checkpoint: { ...checkpoint, checkpointId: 'cp-console' },
        expectedBinding: (await json<{ binding: unknown }>(prepared)).binding,
      },
    });
    expect(command.status).toBe(202);
    const operation = page.locator('table[aria-label="build-test operations"] tr[data-operation-state]');
    await expect
      .poll(() => operation.getAttribute('data-operation-state'), { timeout: SHOWN_MS })
      .toBe('Succeeded');
    expect(await operation.locator('td').first().textContent()).toBe('op-cp-console');
    // A page left open describes the sandbox only when something else moved the Environment: its
    // own inspection's describe does not wake its live wait (it once did, describing the sandbox
    // several times a second). An absence, so a quiet window; a loaded machine only hides a loop.
    const journalSince = async (revision: number) =>
      (
        await h.db.query<{ event_type: string; revision: string }>(
          `SELECT event_type, revision FROM environment_journal WHERE environment_id = $1 AND revision > $2`,
          [s.environmentId, revision],
        )
      ).rows;
    const quietFrom = Math.max(0, ...(await journalSince(0)).map((r) => Number(r.revision)));
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const window = await journalSince(quietFrom);
    const describes = window.filter((r) => r.event_type === 'sandbox.describe').length;
    expect(describes).toBeLessThanOrEqual(1 + (window.length - describes));
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

  it('loads /docs with no request leaving this server', { timeout: DOCS_QUIET_MS + 30_000 }, async () => {
    const page = await openPage();
    const before = foreign.length;
    await page.goto(`${origin}/docs`);
    // The page parses a 3.5 MB script and renders the whole document: under load that alone has
    // taken most of SHOWN_MS, so the quiet network gets longer.
    await page.waitForLoadState('networkidle', { timeout: DOCS_QUIET_MS });
    expect(foreign.slice(before)).toEqual([]);
    await page.close();
  });
});
