// The production build (`npm run build`): transpiles the runtime sources with esbuild into dist/ (or
// --out-dir DIR) and copies the files the code reads at run time beside it, so that
// `node dist/cli/main.js` needs no TypeScript loader and no source tree. Type checking stays with
// `tsc --noEmit` (`npm run typecheck`, part of `npm test`); the build only strips types, which takes
// about a second where the tsc emit took 15–30 s.
//
// dist/ mirrors the source layout, one .js file (and its source map) per .ts file, so paths the code
// derives from import.meta.url hold in both: every .sql file keeps its place (store/migrate.ts reads
// ../migrations/, providers/simulated/migrate.ts reads ./migrations/), and the Scalar bundle of the
// installed @scalar/api-reference, when there is one, lands in http/assets/ where http/routes/docs.ts
// looks first, beside the console's browser bundle (console/, http/routes/console-assets.ts). Each file is its own esbuild entry with every relative import left external (its `.ts`
// specifier rewritten to `.js`) and every package external, so nothing is bundled twice.
//
// The output directory is emptied first: a file whose source was deleted must not linger there. The
// stamp of the sources (cli/build-stamp.mjs) is written last, so an interrupted build leaves no stamp
// and counts as missing. `--check` builds nothing: it prints whether the build is current and exits
// 0 when it is, 1 when it is stale or missing.
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build as esbuild, type Plugin } from 'esbuild';
import { buildInputs, buildState, RUNTIME_FOLDERS, sourceStamp, STAMP_FILE } from '../cli/build-stamp.mjs';
import { bundleConsole, CONSOLE_BUNDLE_FILE } from '../http/routes/console-assets.ts';
import { SCALAR_BUNDLE_FILE } from '../http/routes/docs.ts';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const require = createRequire(import.meta.url);

// Folders the build must never empty: the checkout's own.
const KEEP = new Set([
  ...RUNTIME_FOLDERS,
  'bench',
  'chaos',
  'deploy',
  'docs',
  'node_modules',
  'scripts',
  'test',
  '.ci',
  '.git',
]);

interface Options {
  outDir: string;
  check: boolean;
}

function optionsOf(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: { 'out-dir': { type: 'string', default: 'dist' }, check: { type: 'boolean', default: false } },
  });
  const outDir = resolve(root, values['out-dir']);
  const up = relative(outDir, root);
  const holdsCheckout = up === '' || (!up.startsWith('..') && !isAbsolute(up));
  const down = relative(root, outDir);
  const insideKept = !down.startsWith('..') && !isAbsolute(down) && KEEP.has(down.split(sep)[0]!);
  if (holdsCheckout || insideKept) throw new Error(`refusing to empty ${outDir} for the build`);
  return { outDir, check: values.check };
}

// A relative `./x.ts` stays an import of the sibling output `./x.js`; packages stay imports too.
const keepImportsExternal: Plugin = {
  name: 'keep-imports-external',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (!args.path.endsWith('.ts')) {
        throw new Error(
          `${relative(root, args.importer)}: relative import ${args.path} does not name a .ts file`,
        );
      }
      return { path: `${args.path.slice(0, -'.ts'.length)}.js`, external: true };
    });
  },
};

async function transpile(outDir: string, sources: string[]): Promise<void> {
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: sources,
    outdir: outDir,
    outbase: root,
    bundle: true,
    packages: 'external',
    plugins: [keepImportsExternal],
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    sourcemap: true,
    keepNames: true,
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(`esbuild failed with ${result.errors.length} error(s)`);
}

async function copyAssets(outDir: string, files: string[]): Promise<void> {
  for (const file of files) {
    const target = join(outDir, file);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(join(root, file), target);
  }
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

const shown = (outDir: string): string => relative(process.cwd(), outDir) || '.';

async function build(argv: string[]): Promise<void> {
  const { outDir, check } = optionsOf(argv);
  if (check) {
    const state = buildState(root, outDir);
    process.stdout.write(`${shown(outDir)} is ${state}\n`);
    process.exitCode = state === 'current' ? 0 : 1;
    return;
  }
  const started = performance.now();
  // Taken before the first file is read, so an edit made while the build runs leaves it stale.
  const stamp = sourceStamp(root);
  const inputs = buildInputs(root).filter((file) => RUNTIME_FOLDERS.includes(file.split('/')[0]!));
  await rm(outDir, { recursive: true, force: true });
  await transpile(
    outDir,
    inputs.filter((file) => file.endsWith('.ts')),
  );
  const sql = inputs.filter((file) => file.endsWith('.sql'));
  await copyAssets(outDir, sql);
  const scalar = await copyScalarBundle(outDir);
  // The console page's script: console/ and preact in one browser module.
  await writeFile(
    join(outDir, 'http', CONSOLE_BUNDLE_FILE),
    await bundleConsole(join(root, 'console', 'main.ts')),
  );
  await writeFile(join(outDir, STAMP_FILE), `${stamp}\n`);
  process.stdout.write(
    `built ${shown(outDir)} in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
      `(${sql.length} SQL file(s), console${scalar ? ', Scalar bundle' : ', no Scalar bundle installed'})\n`,
  );
}

await build(process.argv.slice(2));
