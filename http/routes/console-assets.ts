// The console's browser bundle (console/main.ts and preact, one ES module). A production build
// writes it to dist/http/assets/console.js (scripts/build.ts); a development checkout has no such
// file, so the first request bundles the sources with esbuild, a development dependency, and keeps
// the result. A production install without a build answers null: the route says so.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const CONSOLE_BUNDLE_FILE = 'assets/console.js';

const builtBundle = fileURLToPath(new URL(`../${CONSOLE_BUNDLE_FILE}`, import.meta.url));
const consoleEntry = fileURLToPath(new URL('../../console/main.ts', import.meta.url));

/** Bundles the console from `entry` for the browser: no CDN, every byte from the installed packages. */
export async function bundleConsole(entry: string = consoleEntry): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const [output] = result.outputFiles;
  if (output === undefined) throw new Error('esbuild wrote no console bundle');
  return output.text;
}

let cached: Promise<string | null> | undefined;

/** The bundle: the built file, else one bundled from the sources, else null (neither is here). */
export function consoleBundle(): Promise<string | null> {
  cached ??= readFile(builtBundle, 'utf8').catch(() =>
    bundleConsole().catch((error: unknown) => {
      cached = undefined;
      if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return null;
      throw error;
    }),
  );
  return cached;
}
