// The API reference page works without the Internet: /docs names no script or stylesheet on another
// host, and the one script it loads (the Scalar bundle of the installed @scalar/api-reference) is
// served by Sandlot itself. test/e2e/build.test.ts asks the same of the compiled server.
import { describe, expect, it } from 'vitest';
import { SCALAR_BUNDLE_ROUTE, docsRoutes } from '../../http/routes/docs.ts';
import { isExternal, referencedUrls } from '../support/offline-page.ts';

describe('the API reference page offline', () => {
  const app = docsRoutes('/openapi.json');

  it('references no script or style on another host, and loads the bundle from its own route', async () => {
    const res = await app.request('/docs');
    expect(res.status).toBe(200);
    const html = await res.text();
    const urls = referencedUrls(html);
    expect(urls.filter(isExternal)).toEqual([]);
    expect(urls).toContain(SCALAR_BUNDLE_ROUTE);
    // Scalar's default fonts come from its CDN; the page asks for none.
    expect(html).toContain('"withDefaultFonts": false');
  });

  it('configures the page to send nothing elsewhere: no agent, proxy, telemetry or share toolbar', async () => {
    const html = await (await app.request('/docs')).text();
    // The configuration the page's inline script hands Scalar, as the integration writes it.
    for (const setting of [
      /"agent": \{\s*"disabled": true\s*\}/,
      /"proxyUrl": ""/,
      /"telemetry": false/,
      /"showToolbar": "never"/,
      /"showDeveloperTools": "never"/,
    ]) {
      expect(html).toMatch(setting);
    }
    expect(html).not.toMatch(/scalar\.com/);
  });

  it('serves the Scalar bundle from the installed package as JavaScript', async () => {
    const res = await app.request(SCALAR_BUNDLE_ROUTE);
    expect(res.status, 'is @scalar/api-reference installed? (npm ci)').toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    const script = await res.text();
    // The UMD bundle the page's inline script calls.
    expect(script).toContain('createApiReference');
    expect(script.length).toBeGreaterThan(100_000);
  });
});
