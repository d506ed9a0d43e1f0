// The inspector relay's page in headless Chromium: with the hosted inspector out of reach it says so
// and points to the console; with an inspector that loads (a stand-in served here, which announces
// itself as the Stately one does and lists what it is handed) every event sent to the relay's
// WebSocket reaches it, including events sent before the page was opened.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startInspectorRelay, type InspectorRelay } from '../../cli/inspector-relay.ts';
import { browserTestsRun, launchChromium } from '../support/browser.ts';

const SHOWN_MS = 20_000;

// Announces itself to the page that frames it, then lists the type of every event it is posted.
const standInInspector = `<!doctype html><html><body><ol id="events"></ol><script>
window.addEventListener('message', (m) => {
  const li = document.createElement('li'); li.textContent = m.data.type; document.getElementById('events').append(li);
});
parent.postMessage({ type: '@statelyai.connected' }, '*');
</script></body></html>`;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  return (server.address() as AddressInfo).port;
}

async function send(port: number, event: unknown): Promise<void> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise((open, fail) => socket.once('open', open).once('error', fail));
  await new Promise<void>((sent, fail) => socket.send(JSON.stringify(event), (e) => (e ? fail(e) : sent())));
  socket.close();
}

describe.skipIf(!browserTestsRun)('the inspector relay page', () => {
  let browser: Browser;
  const relays: InspectorRelay[] = [];
  const servers: Server[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    for (const relay of relays) await relay.close();
    for (const server of servers) await new Promise((done) => server.close(done));
  });

  it('says the hosted inspector cannot be reached, and points to the console', async () => {
    // A port nothing listens on: the framed inspector never loads, as without internet.
    const closed = createServer();
    const nowhere = await listen(closed);
    await new Promise((done) => closed.close(done));
    const relay = await startInspectorRelay({
      port: 0,
      host: '127.0.0.1',
      inspectorUrl: `http://127.0.0.1:${nowhere}/inspect`,
      consoleUrl: 'http://127.0.0.1:8080/console',
      readyWithinMs: 500,
    });
    relays.push(relay);
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${relay.port}/`);
    const notice = page.locator('#notice');
    await notice.waitFor({ state: 'visible', timeout: SHOWN_MS });
    expect(await notice.textContent()).toContain('cannot be reached');
    expect(await notice.locator('a').getAttribute('href')).toBe('http://127.0.0.1:8080/console');
    await page.close();
  });

  it('hands every event to an inspector that loads, those sent before the page opened too', async () => {
    const inspector = createServer((_, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end(standInInspector),
    );
    servers.push(inspector);
    const inspectorPort = await listen(inspector);
    const relay = await startInspectorRelay({
      port: 0,
      host: '127.0.0.1',
      inspectorUrl: `http://127.0.0.1:${inspectorPort}/`,
      consoleUrl: 'http://127.0.0.1:8080/console',
      readyWithinMs: 60_000,
    });
    relays.push(relay);
    await send(relay.port, { type: '@xstate.actor', sessionId: 'a' });
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${relay.port}/`);
    const events = page.frameLocator('#inspector').locator('#events li');
    await events.first().waitFor({ timeout: SHOWN_MS });
    await send(relay.port, { type: '@xstate.event', sessionId: 'a' });
    await expect
      .poll(() => events.allTextContents(), { timeout: SHOWN_MS })
      .toEqual(['@xstate.actor', '@xstate.event']);
    expect(await page.locator('#notice').isHidden()).toBe(true);
    await page.close();
  });
});
