// A headless Chromium for the browser tests: the system's (Debian's `chromium`), never a download,
// driven by playwright-core. SANDLOT_CHROMIUM names another executable. Outside CI a machine without
// one skips those tests with a NOT RUN line; in CI (CI=true) a missing browser fails them instead,
// since .ci/run installs it.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const candidates = [process.env['SANDLOT_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'];
export const chromiumPath = candidates.find((path): path is string => path !== undefined && existsSync(path));
export const browserRequired = process.env['CI'] === 'true';

if (chromiumPath === undefined && !browserRequired) {
  console.warn(
    'NOT RUN: the browser tests, because no Chromium was found (looked for SANDLOT_CHROMIUM, ' +
      '/usr/bin/chromium, /usr/bin/chromium-browser); install it with `apt-get install -y chromium`.',
  );
}

export async function launchChromium(): Promise<Browser> {
  if (chromiumPath === undefined) {
    throw new Error('CI=true but no Chromium is installed (apt-get install -y chromium, as .ci/run does)');
  }
  // As root in a container Chromium's sandbox cannot start; the page is our own, on 127.0.0.1.
  return chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu'] });
}

/** Whether the browser tests run here: a browser was found, or CI requires them (and fails without). */
export const browserTestsRun = chromiumPath !== undefined || browserRequired;
