// What the document's patch is for: Git itself applies it to the accepted baseline and gets exactly
// the captured tree, and refuses it on any other baseline (its full index lines name the blobs it
// patches). Runs the `git` binary in a scratch repository, with hooks and global config left out.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { constructDocument } from '../../formats/awscapt2/construct-document.ts';
import type { PackageFile } from '../../formats/awscapt2/file-package.ts';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import { baselineOf, binding, file, outputsOf, source } from '../support/build-test-documents.ts';

const run = promisify(execFile);
const gitEnv = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
const git = (cwd: string, ...args: string[]) =>
  run('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd,
    env: gitEnv,
  });
const hasGit = await run('git', ['--version']).then(
  () => true,
  () => false,
);

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function repositoryWith(files: readonly PackageFile[]): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'sandlot-awscapt2-'));
  await git(dir, 'init', '-q');
  for (const f of files) {
    await mkdir(dirname(join(dir, f.path)), { recursive: true });
    await writeFile(join(dir, f.path), f.content, { mode: f.mode === '100755' ? 0o755 : 0o644 });
  }
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-qm', 'baseline');
  return dir;
}

const BASELINE = [
  file('README.md', '# demo\n'),
  file('src/main.c', 'int main(void) { return 0; }\n'),
  file('bin/tool', '#!/bin/sh\n'),
  file('dir with space/ünïcode "quoted".txt', 'text\n'),
];
const COLLECTED = [
  BASELINE[0]!,
  file('src/main.c', 'int main(void) { return 1; }\n'),
  file('bin/tool', '#!/bin/sh\n', '100755'),
  BASELINE[3]!,
  file('build/out.o', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2, 3])),
  file('build/empty', ''),
  file('build/back\\slash', 'b'),
];

describe.skipIf(!hasGit)('the output document patch under git apply', () => {
  const document = constructDocument({
    binding,
    source,
    baseline: baselineOf(BASELINE),
    collected: COLLECTED,
    outputs: outputsOf(COLLECTED, [
      'src/main.c',
      'bin/tool',
      'build/out.o',
      'build/empty',
      'build/back\\slash',
    ]),
  });
  const patch = Buffer.from(parseDocument(document.bytes).patch);

  it('turns the baseline into exactly the captured tree', async () => {
    const repo = await repositoryWith(BASELINE);
    const patchFile = `${repo}.patch`;
    await writeFile(patchFile, patch);
    try {
      await git(repo, 'apply', '--check', patchFile);
      await git(repo, 'apply', patchFile);
    } finally {
      await rm(patchFile);
    }
    for (const f of COLLECTED) {
      expect(await readFile(join(repo, f.path)), f.path).toEqual(Buffer.from(f.content));
      const executable = ((await stat(join(repo, f.path))).mode & 0o111) !== 0;
      expect(executable, f.path).toBe(f.mode === '100755');
    }
    const { stdout } = await git(repo, 'status', '--porcelain', '--untracked-files=all', '-z');
    expect(stdout.split('\0').filter(Boolean)).toHaveLength(5);
  });

  it('is refused on another baseline', async () => {
    const other = BASELINE.map((f) =>
      f.path === 'src/main.c' ? file('src/main.c', 'int main(void) { return 2; }\n') : f,
    );
    const repo = await repositoryWith(other);
    const patchFile = `${repo}.patch`;
    await writeFile(patchFile, patch);
    try {
      await expect(git(repo, 'apply', '--check', patchFile)).rejects.toThrow(/does not match|patch failed/);
    } finally {
      await rm(patchFile);
    }
  });
});
