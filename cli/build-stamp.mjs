// The stamp of a production build: one SHA-256 over every input the build reads, written last into
// the output directory (`.build-stamp`), so that `npm start` and the `sandlot` bin can tell a current
// dist/ from a stale one without building. Plain JavaScript, because the bin and `npm start` read it
// before any TypeScript loader runs.
//
// The inputs are the runtime and browser folders' .ts (tests excluded), .mjs and .sql files, the package and lock
// files, the TypeScript settings and the build script itself. Contents are hashed, not modification
// times: a checkout, a `git stash` or a copy changes times without changing the build, and a source
// edited within one clock tick must still count. Reading ≈ 400 small files costs a few tens of
// milliseconds.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

export const STAMP_FILE = '.build-stamp';

/** Top-level folders holding the code `node dist/cli/main.js` runs. */
export const RUNTIME_FOLDERS = [
  'actors',
  'cli',
  'config',
  'formats',
  'http',
  'lib',
  'machines',
  'migrations',
  'providers',
  'store',
  'workers',
];

/** Folders of browser code the build bundles into one file each (the console), never runs itself. */
export const BROWSER_FOLDERS = ['console'];

/** Every folder the build reads. */
export const SOURCE_FOLDERS = [...RUNTIME_FOLDERS, ...BROWSER_FOLDERS];

/** Single files whose change changes the build. */
const BUILD_FILES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build.ts',
];

const isInput = (name) =>
  (name.endsWith('.ts') && !name.endsWith('.test.ts')) || name.endsWith('.mjs') || name.endsWith('.sql');

function listInputs(dir, into) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (error?.code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') listInputs(path, into);
    } else if (entry.isFile() && isInput(entry.name)) {
      into.push(path);
    }
  }
}

/** The build's inputs under `root`, as sorted paths relative to it (with `/` separators). */
export function buildInputs(root) {
  const files = [];
  for (const folder of SOURCE_FOLDERS) listInputs(join(root, folder), files);
  const relativePaths = files.map((file) => relative(root, file).split(sep).join('/'));
  return [...relativePaths, ...BUILD_FILES].sort();
}

/** The hex stamp of the sources under `root`: path, length and contents of every input. */
export function sourceStamp(root) {
  const hash = createHash('sha256');
  for (const path of buildInputs(root)) {
    let contents;
    try {
      contents = readFileSync(join(root, path));
    } catch (error) {
      if (error?.code !== 'ENOENT') throw error;
      contents = undefined;
    }
    hash.update(`${path}\0${contents === undefined ? 'absent' : contents.length}\0`);
    if (contents !== undefined) hash.update(contents);
  }
  return hash.digest('hex');
}

/** The stamp a finished build left in `outDir`, or undefined when there is none. */
export function readStamp(outDir) {
  try {
    return readFileSync(join(outDir, STAMP_FILE), 'utf8').trim();
  } catch (error) {
    if (error?.code === 'ENOENT' || error?.code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/**
 * Whether the build in `outDir` was made from the sources under `root` as they are now: 'current',
 * 'stale' (a stamp of other sources) or 'missing' (no finished build there).
 */
export function buildState(root, outDir) {
  const stamp = readStamp(outDir);
  if (stamp === undefined) return 'missing';
  return stamp === sourceStamp(root) ? 'current' : 'stale';
}
