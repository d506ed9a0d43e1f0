// What many test files would otherwise each make again, prepared once per run (vitest global setup)
// so that each test pays for its own work and not for start-up that is the same every time:
//
// - dist/ is built when it is not current with the sources. The bin (cli/sandlot.mjs) runs dist/
//   while it is current, as it does for an operator with a built checkout, instead of loading every
//   source through tsx (one to three seconds per command on a busy 2-core machine). A source edited
//   during the run makes dist/ stale, and the bin then runs the sources: never code older than them.
// - An embedded data directory's database, initialised and migrated by `sandlot migrate`, is kept as
//   a template. PGlite's initdb and the migrations take five to ten seconds a time here; a test that
//   starts a CLI on a new data directory copies the template's database into it
//   (`seedEmbeddedDatabase`) unless what it tests is that very first start. Only the database is
//   copied: the signing key, the lock and everything else a first start writes stay the test's own.
// - An image of a new in-memory PGlite database (`dumpDataDir`), empty as initdb leaves it. A test
//   that opens PGlite in-process (test/support/databases.ts) starts from it in about 1.5 s instead
//   of running initdb again (about 4 s). Outside vitest, without the image, PGlite runs initdb.
//
// Both sit in the system's temporary folder under the stamp of the sources (which covers every
// migration and the locked PGlite version), so later runs on the same sources reuse them.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { buildState, sourceStamp } from '../../cli/build-stamp.mjs';
import { repoRoot } from './crd-dir.ts';

const run = promisify(execFile);
const PREFIX = 'sandlot-test-template-';
const DAY_MS = 24 * 60 * 60 * 1000;
// How the setup tells the test workers (forked from this process after it) where the template and
// the image are: a source edited during the run must not move them.
const TEMPLATE_SETTING = 'SANDLOT_TEST_PGDATA_TEMPLATE';
const IMAGE_SETTING = 'SANDLOT_TEST_PGLITE_IMAGE';

let image: Promise<Blob | undefined> | undefined;

/**
 * The dumped data directory of a new PGlite database to start an in-memory one from, read once per
 * test worker; undefined outside a vitest run (the caller then lets PGlite run initdb).
 */
export function pgliteImage(): Promise<Blob | undefined> {
  image ??= (async () => {
    const file = process.env[IMAGE_SETTING];
    return file === undefined ? undefined : new Blob([await readFile(file)]);
  })();
  return image;
}

/**
 * Gives the embedded data directory `dataDir` (created when missing) a copy of the template's
 * initialised and migrated database, as a CLI leaves it after `sandlot migrate` on a new directory.
 */
export async function seedEmbeddedDatabase(dataDir: string): Promise<void> {
  const folder = process.env[TEMPLATE_SETTING];
  const template = path.join(folder ?? '', 'pgdata');
  try {
    if (folder === undefined) throw new Error('unset');
    await stat(template);
  } catch {
    throw new Error(
      `no embedded database template at ${template}: the vitest global setup ` +
        '(test/support/prepared-once.ts) prepares it; run the tests through vitest',
    );
  }
  await mkdir(dataDir, { recursive: true });
  await cp(template, path.join(dataDir, 'pgdata'), { recursive: true });
}

const cliEnv = (dataDir: string) => ({
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  HOME: dataDir,
  SANDLOT_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
});

async function ensureBuild(): Promise<void> {
  const state = buildState(repoRoot, path.join(repoRoot, 'dist'));
  if (state === 'current') return;
  const started = performance.now();
  await run(
    process.execPath,
    [path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/build.ts'],
    {
      cwd: repoRoot,
    },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`dist/ was ${state}: built it in ${seconds} s for the tests that spawn the CLI`);
}

async function ensureTemplate(stamp: string): Promise<void> {
  const target = path.join(tmpdir(), `${PREFIX}${stamp}`);
  process.env[TEMPLATE_SETTING] = target;
  try {
    await stat(path.join(target, 'pgdata'));
    return;
  } catch {
    // Not made yet for these sources.
  }
  const started = performance.now();
  const work = await mkdtemp(`${target}.partial-`);
  try {
    await run(process.execPath, [path.join(repoRoot, 'cli', 'sandlot.mjs'), 'migrate'], {
      cwd: repoRoot,
      env: cliEnv(work),
    });
    await rm(target, { recursive: true, force: true });
    // Renamed whole, so a run never copies a template that is still being written.
    await rename(work, target);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`prepared the embedded database template in ${seconds} s (${target})`);
}

async function ensureImage(stamp: string): Promise<void> {
  const target = path.join(tmpdir(), `${PREFIX}${stamp}.pglite.tar`);
  process.env[IMAGE_SETTING] = target;
  try {
    await stat(target);
    return;
  } catch {
    // Not made yet for these sources.
  }
  const pglite = await PGlite.create();
  const dump = await pglite.dumpDataDir('none');
  await pglite.close();
  const partial = `${target}.partial-${process.pid}`;
  await writeFile(partial, Buffer.from(await dump.arrayBuffer()));
  await rename(partial, target);
}

/**
 * What runs on other sources (or interrupted runs) left: removed once a day old, so a run on other
 * sources at the same time keeps its own.
 */
async function removeOldTemplates(stamp: string): Promise<void> {
  const kept = new Set([`${PREFIX}${stamp}`, `${PREFIX}${stamp}.pglite.tar`]);
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(PREFIX) || kept.has(name)) continue;
    const other = path.join(tmpdir(), name);
    const { mtimeMs } = await stat(other).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs > DAY_MS) await rm(other, { recursive: true, force: true });
  }
}

export default async function setup(project: TestProject): Promise<void> {
  // The unit project spawns nothing.
  const names = project.vitest.projects.map((p) => p.name);
  if (names.length > 0 && names.every((name) => name === 'unit')) return;
  await ensureBuild();
  const stamp = sourceStamp(repoRoot).slice(0, 16);
  // The image is made in this process while the template's `sandlot migrate` runs in its own.
  await Promise.all([ensureTemplate(stamp), ensureImage(stamp)]);
  await removeOldTemplates(stamp);
}
