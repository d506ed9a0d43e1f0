// The production build and the container image, without a Docker engine (none runs on these
// machines): the Dockerfile's structure is checked, and the image's runtime stage is reproduced in a
// temporary directory — `npm run build` into it, package*.json beside it, and a node_modules holding
// the production dependencies only (links to this checkout's, from `npm ls --omit=dev`), so tsx and
// every other development dependency is out of reach. The compiled CLI must answer --help and serve
// /readyz and an offline /docs from there, and stop cleanly on SIGTERM.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFile, cp, copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_FOLDERS, sourceStamp, STAMP_FILE } from '../../cli/build-stamp.mjs';
import { isExternal, referencedUrls } from '../support/offline-page.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const LISTENING = /sandlot listening on (http:\/\/\S+) /;
const tsxCli = path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs');

interface Stage {
  name: string;
  from: string;
  instructions: { keyword: string; args: string }[];
}

/** FROM … AS name blocks, with their instructions (continuation lines joined, comments dropped). */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of lines) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const value = rest.join(' ');
    const upper = keyword.toUpperCase();
    if (upper === 'ARG' && stages.length === 0) {
      const [name = '', def = ''] = value.split('=');
      args.set(name, def);
    } else if (upper === 'FROM') {
      const [image = '', , name = ''] = value.split(/\s+/);
      const from = image.replace(/\$\{(\w+)\}/g, (_, arg: string) => args.get(arg) ?? '');
      stages.push({ name, from, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: upper, args: value });
    }
  }
  return stages;
}

const argsOf = (stage: Stage, keyword: string): string[] =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map(async (e) =>
      e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)],
    ),
  );
  return nested.flat();
}

/** The top-level packages of `npm ci --omit=dev`, linked from this checkout's node_modules. */
async function linkProductionDependencies(target: string): Promise<string[]> {
  const modules = path.join(repoRoot, 'node_modules');
  // Exit status 1 only reports problems (e.g. an extraneous package); the list is still complete.
  const { stdout } = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: repoRoot,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  const names = new Set<string>();
  for (const line of stdout.split('\n')) {
    const inside = path.relative(modules, line.trim());
    if (line.trim() === '' || inside.startsWith('..')) continue;
    const parts = inside.split(path.sep);
    // Nested copies (a/node_modules/b) come with their parent.
    const name = parts[0]!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
    if (!inside.slice(name.length).includes('node_modules')) names.add(name);
  }
  for (const name of names) {
    await mkdir(path.dirname(path.join(target, name)), { recursive: true });
    await symlink(path.join(modules, name), path.join(target, name), 'dir');
  }
  return [...names];
}

describe('the production build and the container image', () => {
  let work: string;
  let dist: string;
  let production: string[];
  const children = new Set<ChildProcess>();

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'sandlot-build-'));
    dist = path.join(work, 'dist');
    // The build stage's command, into a directory of its own so a checkout's dist/ is left alone.
    await run('npm', ['run', 'build', '--', '--out-dir', dist], { cwd: repoRoot });
    for (const file of ['package.json', 'package-lock.json']) {
      await copyFile(path.join(repoRoot, file), path.join(work, file));
    }
    // The bin shim, as the image carries it: no sources beside it, so it runs dist/.
    await mkdir(path.join(work, 'cli'));
    await copyFile(path.join(repoRoot, 'cli', 'sandlot.mjs'), path.join(work, 'cli', 'sandlot.mjs'));
    production = await linkProductionDependencies(path.join(work, 'node_modules'));
  }, 120_000);

  it('stamps the build with the sources it was made from, written last', async () => {
    const stamp = (await readFile(path.join(dist, STAMP_FILE), 'utf8')).trim();
    expect(stamp).toBe(sourceStamp(repoRoot));
    const { stdout } = await run(
      process.execPath,
      [tsxCli, 'scripts/build.ts', '--check', '--out-dir', dist],
      {
        cwd: repoRoot,
      },
    );
    expect(stdout).toMatch(/is current/);
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('builds in one stage and runs compiled JavaScript as a non-root user with production dependencies only', async () => {
    const stages = parseDockerfile(await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8'));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((stage) => argsOf(stage, 'RUN').some((r) => r.includes('npm run build')));
    const final = stages.at(-1)!;
    expect(build, 'a stage runs npm run build').toBeDefined();
    expect(build).not.toBe(final);
    expect(argsOf(build!, 'RUN')).toContain('npm ci --no-audit --no-fund');
    // Pinned: a version tag, never latest or a bare major.
    for (const stage of stages) expect(stage.from).toMatch(/^node:\d+\.\d+\.\d+-[\w.-]+$/);

    const runs = argsOf(final, 'RUN');
    expect(runs.some((r) => /npm ci\b.*--omit=dev/.test(r))).toBe(true);
    expect(runs.some((r) => /npm run build|npm (ci|install)(?!.*--omit=dev)/.test(r))).toBe(false);
    const copies = argsOf(final, 'COPY');
    expect(copies).toContain(`--from=${build!.name} /app/dist dist`);
    // Nothing but package*.json, the build's output and the bin shim comes from the context.
    expect(copies.filter((c) => !c.startsWith('--from=')).sort()).toEqual([
      'cli/sandlot.mjs cli/sandlot.mjs',
      'package.json package-lock.json ./',
    ]);
    const users = argsOf(final, 'USER');
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    expect(argsOf(final, 'ENTRYPOINT')).toEqual(['["node", "dist/cli/main.js"]']);
    expect(argsOf(final, 'EXPOSE').join(' ').split(/\s+/)).toEqual(expect.arrayContaining(['8080', '9464']));
  });

  it('keeps dependencies, builds and local state out of the Docker build context', async () => {
    const ignored = (await readFile(path.join(repoRoot, '.dockerignore'), 'utf8')).split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.sandlot', '.git']));
  });

  it('compiles every relative import to .js, never loads tsx, and carries the SQL migrations', async () => {
    const files = await listFiles(dist);
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
    // The compiled modules (the Scalar bundle under http/assets/ is the browser's, not Node's).
    const modules = files.filter((f) => f.endsWith('.js') && !f.includes(`${path.sep}assets${path.sep}`));
    expect(modules).toContain(path.join(dist, 'cli', 'main.js'));
    const tsImports: string[] = [];
    const tsxImports: string[] = [];
    for (const file of modules) {
      const code = await readFile(file, 'utf8');
      if (/(?:from|import\()\s*["']\.{1,2}\/[^"']*\.ts["']/.test(code)) tsImports.push(file);
      if (/(?:from|import\(|require\()\s*["']tsx(?:\/[^"']*)?["']/.test(code)) tsxImports.push(file);
    }
    expect(tsImports).toEqual([]);
    expect(tsxImports).toEqual([]);
    const sqlIn = async (dir: string) => (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
    expect(await sqlIn(path.join(dist, 'migrations'))).toEqual(
      await sqlIn(path.join(repoRoot, 'migrations')),
    );
    const simulated = path.join('providers', 'simulated', 'migrations');
    expect(await sqlIn(path.join(dist, simulated))).toEqual(await sqlIn(path.join(repoRoot, simulated)));
    expect(production).not.toContain('tsx');
  });

  it('answers --help from the compiled CLI, directly and through the bin shim', async () => {
    const env = { PATH: process.env['PATH'] ?? '', HOME: work };
    for (const entry of [path.join(dist, 'cli', 'main.js'), path.join(work, 'cli', 'sandlot.mjs')]) {
      const { stdout } = await run(process.execPath, [entry, '--help'], { cwd: work, env });
      expect(stdout, entry).toMatch(/serve/);
      expect(stdout, entry).toMatch(/migrate/);
    }
  });

  it('serves /readyz and an offline /docs from the compiled server, then stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [path.join(dist, 'cli', 'main.js'), 'serve', '--port', '0'], {
      cwd: work,
      env: { PATH: process.env['PATH'] ?? '', HOME: work, SANDLOT_DATA_DIR: path.join(work, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let output = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const base = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
        const match = LISTENING.exec(output);
        if (match?.[1] !== undefined) resolve(match[1]);
      });
      void exited.then((code) => reject(new Error(`serve exited (${code}):\n${output}`)));
    });

    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const page = await fetch(`${base}/docs`);
    expect(page.status).toBe(200);
    const urls = referencedUrls(await page.text());
    expect(urls.filter(isExternal)).toEqual([]);
    const script = urls.find((url) => url.endsWith('.js'));
    expect(script).toBeDefined();
    const bundle = await fetch(new URL(script!, base));
    expect(bundle.status, 'the build copies the installed @scalar/api-reference bundle').toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await bundle.text()).toContain('createApiReference');

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    children.delete(child);
  });
});

// A development checkout: `npm start` (scripts/start.mjs) builds only when dist/ is not current, then
// runs the CLI from dist/ in its own process; the bin
// runs dist/ when it is current and the sources through tsx when it is not. Checked on a copy of the
// checkout's build inputs, so the checkout's own dist/ is never touched while other tests spawn it.
describe("a checkout's dist/: built when stale, used when current", () => {
  let copy: string;
  const MARK = 'ran dist/cli/main.js';

  beforeAll(async () => {
    copy = await mkdtemp(path.join(tmpdir(), 'sandlot-checkout-'));
    for (const folder of SOURCE_FOLDERS)
      await cp(path.join(repoRoot, folder), path.join(copy, folder), { recursive: true });
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      await copyFile(path.join(repoRoot, file), path.join(copy, file));
    }
    await cp(path.join(repoRoot, 'scripts'), path.join(copy, 'scripts'), { recursive: true });
    await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  }, 120_000);

  afterAll(async () => {
    if (copy !== undefined) await rm(copy, { recursive: true, force: true });
  });

  // `npm start`'s script with `--help` in place of `serve`: the build line, then the CLI's answer.
  const start = async () =>
    (await run(process.execPath, [path.join(copy, 'scripts', 'start.mjs'), '--help'], { cwd: copy })).stdout;
  const help = async () =>
    run(process.execPath, [path.join(copy, 'cli', 'sandlot.mjs'), '--help'], {
      cwd: copy,
      env: { PATH: process.env['PATH'] ?? '', HOME: copy },
    });

  it('builds a missing dist/, then skips the build while it is current', async () => {
    const first = await start();
    expect(first).toMatch(/dist\/ is missing: building[\s\S]*built dist in[\s\S]*serve/);
    const second = await start();
    expect(second).toMatch(/dist\/ is current with the sources: not rebuilding[\s\S]*serve/);
    expect(second).not.toMatch(/built dist/);
  });

  it('runs dist/ through the bin while it is current, and the sources once one changes', async () => {
    // Marks the compiled entry; the stamp covers the sources, so dist/ stays current.
    const entry = path.join(copy, 'dist', 'cli', 'main.js');
    await appendFile(entry, `\nprocess.stderr.write(${JSON.stringify(MARK)});\n`);
    const fromDist = await help();
    expect(fromDist.stdout).toMatch(/serve/);
    expect(fromDist.stderr).toContain(MARK);

    await appendFile(path.join(copy, 'cli', 'main.ts'), '\n// edited after the build\n');
    const fromSources = await help();
    expect(fromSources.stdout).toMatch(/serve/);
    expect(fromSources.stderr).not.toContain(MARK);
    expect(await start()).toMatch(/older than the sources: building[\s\S]*serve/);
  });
});
