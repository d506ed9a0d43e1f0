#!/usr/bin/env node
// Entry point for `npx sandlot`. A development checkout (the TypeScript sources beside this file and
// tsx installed) runs the sources through tsx, so a command, or a test that spawns one, never runs a
// build older than the code. Everywhere else (a production install, the container image) it runs
// the compiled JavaScript in dist/ (`npm run build`), which needs no loader.
import { existsSync } from 'node:fs';

const sources = new URL('./main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);

async function loadTsx() {
  try {
    return await import('tsx/esm/api');
  } catch (error) {
    // Installed with --omit=dev: tsx is a development dependency.
    if (error?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

const tsx = existsSync(sources) ? await loadTsx() : undefined;
if (tsx !== undefined) {
  tsx.register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write('sandlot: no compiled build in dist/ and no TypeScript loader: run `npm run build`\n');
  process.exitCode = 1;
}
