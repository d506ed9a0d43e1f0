// A version 2 seed for tests: a real Git repository with the given files at one commit, bundled
// with the git binary (hooks off, no global or system configuration).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const git = (cwd: string, ...args: string[]) =>
  run(
    '/usr/bin/git',
    ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=t', '-c', 'user.email=t@t', ...args],
    { cwd, env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } },
  );

export interface GitSeed {
  bytes: Buffer;
  baseSha: string;
}

/** Files (path → content; a `.sh` file is executable) committed once and bundled. */
export async function gitSeed(files: Record<string, string>): Promise<GitSeed> {
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-seed-'));
  try {
    await git(dir, 'init', '-q', '-b', 'main');
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), content, { mode: path.endsWith('.sh') ? 0o755 : 0o644 });
    }
    await git(dir, 'add', '-A');
    await git(dir, 'commit', '-qm', 'baseline');
    const baseSha = (await git(dir, 'rev-parse', 'HEAD')).stdout.trim();
    await git(dir, 'bundle', 'create', '-q', 'seed.bundle', '--all');
    return { bytes: await readFile(join(dir, 'seed.bundle')), baseSha };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
