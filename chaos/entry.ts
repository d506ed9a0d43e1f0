// What the chaos children run: a production build (`npm run build --out-dir <dir>`), kept in the
// temporary directory under a hash of everything it is built from, so that the next run with the
// same sources (the smoke test after an edit elsewhere, a second `npm run chaos`) starts at once;
// the build itself takes a second or two. If the build fails (someone's work in progress), the children run
// the sources through tsx (cli/sandlot.mjs), slower to start, and the report says so.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sourceStamp } from '../cli/build-stamp.mjs';
import { repoRoot } from '../test/support/chaos-worker.ts';

export interface ChildEntry {
  kind: 'dist' | 'tsx';
  /** What `node <script> <command>` runs: the build's cli/main.js, or cli/sandlot.mjs. */
  script: string;
  /** The command's own module (cli/main.js or cli/main.ts), for chaos/child-entry.js. */
  main: string;
  note: string;
}

const PREFIX = 'sandlot-chaos-build-';
/** Builds of other sources older than this are removed when a new one is made. */
const STALE_MS = 3_600_000;

function npmBuild(outDir: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'build', '--', '--out-dir', outDir], { cwd: repoRoot });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8_192));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (error) => resolve({ ok: false, output: `${output}${error.message}` }));
    child.once('close', (code) => resolve({ ok: code === 0, output }));
  });
}

async function removeStaleBuilds(keep: string): Promise<void> {
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX) || join(tmpdir(), name) === keep) continue;
    const path = join(tmpdir(), name);
    const info = await stat(path).catch(() => null);
    if (info !== null && Date.now() - info.mtimeMs > STALE_MS)
      await rm(path, { recursive: true, force: true });
  }
}

export async function prepareChildEntry(
  prefer: 'dist' | 'tsx',
  status: (line: string) => void,
): Promise<ChildEntry> {
  const tsx: ChildEntry = {
    kind: 'tsx',
    script: join(repoRoot, 'cli', 'sandlot.mjs'),
    main: join(repoRoot, 'cli', 'main.ts'),
    note: 'node cli/sandlot.mjs (dist/ when current, else the sources through tsx)',
  };
  if (prefer === 'tsx') return tsx;
  const dir = join(tmpdir(), `${PREFIX}${sourceStamp(repoRoot).slice(0, 20)}`);
  const dist = (note: string): ChildEntry => ({
    kind: 'dist',
    script: join(dir, 'cli', 'main.js'),
    main: join(dir, 'cli', 'main.js'),
    note,
  });
  if (existsSync(join(dir, '.complete')))
    return dist(`node ${dir}/cli/main.js (a build of these sources, reused)`);
  const building = `${dir}.${process.pid}`;
  const started = Date.now();
  status(`building the sources into ${dir}`);
  const built = await npmBuild(building);
  if (!built.ok) {
    await rm(building, { recursive: true, force: true });
    const why = built.output.trim().split('\n').slice(-5).join(' | ');
    status(`the build failed, children run the sources through tsx: ${why}`);
    return { ...tsx, note: `${tsx.note}; the build failed: ${why}` };
  }
  // Package imports resolve upwards from the file: give the build the checkout's dependencies.
  await symlink(join(repoRoot, 'node_modules'), join(building, 'node_modules'), 'dir');
  await writeFile(join(building, '.complete'), `${new Date().toISOString()}\n`);
  // Another run may have finished the same build meanwhile: either copy is good.
  await rename(building, dir).catch(() => rm(building, { recursive: true, force: true }));
  await removeStaleBuilds(dir);
  return dist(`node ${dir}/cli/main.js (built in ${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
