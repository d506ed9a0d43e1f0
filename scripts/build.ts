// The production build (`npm run build`): compiles the runtime sources with tsconfig.build.json into
// dist/ (or --out-dir DIR) and copies the files the code reads at run time beside it, so that
// `node dist/cli/main.js` needs no TypeScript loader and no source tree.
//
// dist/ mirrors the source layout, so paths the code derives from import.meta.url hold in both: every
// .sql file keeps its place (store/migrate.ts reads ../migrations/, providers/simulated/migrate.ts
// reads ./migrations/), and the Scalar bundle of the installed @scalar/api-reference, when there is
// one, lands in http/assets/ where http/routes/docs.ts looks first.
//
// The output directory is emptied first: a file whose source was deleted must not linger there.
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SCALAR_BUNDLE_FILE } from '../http/routes/docs.ts';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const require = createRequire(import.meta.url);

// Folders holding run-time files that are not TypeScript (the build's own sources, plus the core
// migrations, which sit at the top level).
const ASSET_ROOTS = [
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
const isAsset = (name: string): boolean => name.endsWith('.sql');

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const nested = await Promise.all(
    entries.map(async (entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : listFiles(path);
      return entry.isFile() ? [path] : [];
    }),
  );
  return nested.flat();
}

// Folders the build must never empty: the checkout's own.
const KEEP = new Set([
  ...ASSET_ROOTS,
  'bench',
  'deploy',
  'docs',
  'node_modules',
  'scripts',
  'test',
  '.ci',
  '.git',
]);

function outDirOf(argv: string[]): string {
  const { values } = parseArgs({ args: argv, options: { 'out-dir': { type: 'string', default: 'dist' } } });
  const outDir = resolve(root, values['out-dir']);
  const up = relative(outDir, root);
  const holdsCheckout = up === '' || (!up.startsWith('..') && !isAbsolute(up));
  const down = relative(root, outDir);
  const insideKept = !down.startsWith('..') && !isAbsolute(down) && KEEP.has(down.split(sep)[0]!);
  if (holdsCheckout || insideKept) throw new Error(`refusing to empty ${outDir} for the build`);
  return outDir;
}

function compile(outDir: string): void {
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) throw new Error(`tsc failed (exit ${result.status ?? result.signal})`);
}

async function copyAssets(outDir: string): Promise<number> {
  const files = (await Promise.all(ASSET_ROOTS.map((dir) => listFiles(join(root, dir)))))
    .flat()
    .filter(isAsset);
  for (const file of files) {
    const target = join(outDir, relative(root, file));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
  return files.length;
}

/** The API reference's browser bundle, taken from the installed package (absent: /docs says so). */
async function copyScalarBundle(outDir: string): Promise<boolean> {
  let bundle: string;
  try {
    bundle = require.resolve('@scalar/api-reference/browser/standalone.js');
  } catch {
    return false;
  }
  const target = join(outDir, 'http', SCALAR_BUNDLE_FILE);
  await mkdir(dirname(target), { recursive: true });
  await copyFile(bundle, target);
  return true;
}

async function build(argv: string[]): Promise<void> {
  const started = performance.now();
  const outDir = outDirOf(argv);
  await rm(outDir, { recursive: true, force: true });
  compile(outDir);
  const assets = await copyAssets(outDir);
  const scalar = await copyScalarBundle(outDir);
  process.stdout.write(
    `built ${relative(process.cwd(), outDir) || '.'} in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
      `(${assets} SQL file(s)${scalar ? ', Scalar bundle' : ', no Scalar bundle installed'})\n`,
  );
}

await build(process.argv.slice(2));
