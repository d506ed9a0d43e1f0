#!/usr/bin/env node
// Entry point for `npx sandlot`. It runs the compiled JavaScript in dist/ when that build is current
// with the sources beside it (the stamp of cli/build-stamp.mjs; checking costs a few tens of
// milliseconds, against a second or more for loading the sources through tsx). A development checkout
// whose dist/ is stale or missing runs the sources through tsx, so a command, or a test that spawns
// one, never runs a build older than the code. An install without the sources (the container image,
// a production install) runs dist/, which needs no loader.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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

// Only a checkout with sources asks for the stamp: the image carries this file alone beside dist/.
async function buildIsCurrent() {
  const { buildState } = await import('./build-stamp.mjs');
  const root = fileURLToPath(new URL('..', import.meta.url));
  return buildState(root, fileURLToPath(new URL('../dist', import.meta.url))) === 'current';
}

const tsx = existsSync(sources) && !(await buildIsCurrent()) ? await loadTsx() : undefined;
if (tsx !== undefined) {
  tsx.register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write('sandlot: no compiled build in dist/ and no TypeScript loader: run `npm run build`\n');
  process.exitCode = 1;
}
