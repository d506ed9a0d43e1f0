// The build stamp decides whether `npm start` rebuilds and whether the bin runs dist/: it must change
// with every input the build reads (contents, not times) and with nothing else.
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildInputs, buildState, sourceStamp, STAMP_FILE } from '../../cli/build-stamp.mjs';

describe('the build stamp', () => {
  let root: string;
  const write = async (file: string, text: string) => {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  };
  const stampBuild = async () => write(`dist/${STAMP_FILE}`, `${sourceStamp(root)}\n`);
  const state = () => buildState(root, path.join(root, 'dist'));

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'sandlot-stamp-'));
    await write('package.json', '{}');
    await write('cli/main.ts', 'export {};\n');
    await write('store/queries.ts', 'export const a = 1;\n');
    await write('migrations/0001_init.sql', 'select 1;\n');
  });
  afterEach(async () => rm(root, { recursive: true, force: true }));

  it('is missing without a finished build and current right after one', async () => {
    expect(state()).toBe('missing');
    await stampBuild();
    expect(state()).toBe('current');
  });

  it('goes stale when a source, a migration or the package file changes, or a source appears', async () => {
    for (const [file, text] of [
      ['store/queries.ts', 'export const a = 2;\n'],
      ['migrations/0001_init.sql', 'select 2;\n'],
      ['package.json', '{"name":"x"}'],
      ['workers/new.ts', 'export {};\n'],
    ] as const) {
      await stampBuild();
      await write(file, text);
      expect(state(), file).toBe('stale');
    }
  });

  it('ignores tests, documents and modification times', async () => {
    await stampBuild();
    await write('store/queries.test.ts', 'it.todo("x");\n');
    await write('docs/notes.md', '# notes\n');
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(root, 'cli/main.ts'), later, later);
    expect(state()).toBe('current');
    expect(buildInputs(root)).not.toContain('store/queries.test.ts');
    expect(buildInputs(root)).toContain('migrations/0001_init.sql');
  });

  it('counts an edit that keeps the length', async () => {
    await stampBuild();
    await write('store/queries.ts', 'export const b = 1;\n');
    expect(state()).toBe('stale');
  });
});
