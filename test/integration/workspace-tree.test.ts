// The Workspace tree hash on real directories: it matches the written-out definition, names content
// and the owner-execute bit but not empty directories or other permission bits, and refuses any
// tree it cannot describe exactly (a link anywhere, a special file, a name that is not UTF-8 or
// holds a control character) instead of hashing around it.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashWorkspaceTree, WorkspaceTreeRefusedError } from '../../actors/workspace/tree.ts';
import { independentTreeHash } from '../contract/agenthost-workspace-cases.ts';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sandlot-tree-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

async function refusal(dir: string): Promise<unknown> {
  try {
    await hashWorkspaceTree(dir);
  } catch (error) {
    return error;
  }
  throw new Error('the tree was hashed');
}

describe('the Workspace tree hash', () => {
  it('hashes an empty Workspace as the format line alone', async () => {
    expect(await hashWorkspaceTree(root)).toEqual({
      // sha256 of "sandlot-workspace-tree-v1\n"
      treeHash: '43fcf74eb70f11ee4355b8fcb34307dc3e493a4d54fa2513f52e80b051db29b6',
      fileCount: 0,
      byteCount: 0,
    });
  });

  it('orders files by UTF-8 bytes and matches the written-out definition', async () => {
    mkdirSync(join(root, 'a/b'), { recursive: true });
    writeFileSync(join(root, 'Z'), 'upper case sorts first');
    writeFileSync(join(root, 'a/b/ä'), 'two bytes in UTF-8');
    writeFileSync(join(root, 'a/b/z'), '');
    writeFileSync(join(root, 'a-'), 'dash sorts before slash');
    const digest = await hashWorkspaceTree(root);
    expect(digest).toEqual(independentTreeHash(root));
    expect(digest.fileCount).toBe(4);
  });

  it('changes with content and the owner-execute bit, not with empty directories or group bits', async () => {
    writeFileSync(join(root, 'tool'), 'x');
    const plain = await hashWorkspaceTree(root);
    mkdirSync(join(root, 'empty/deeper'), { recursive: true });
    chmodSync(join(root, 'tool'), 0o640);
    expect((await hashWorkspaceTree(root)).treeHash).toBe(plain.treeHash);
    chmodSync(join(root, 'tool'), 0o744);
    const executable = await hashWorkspaceTree(root);
    expect(executable.treeHash).not.toBe(plain.treeHash);
    expect(executable).toEqual(independentTreeHash(root));
    writeFileSync(join(root, 'tool'), 'y');
    chmodSync(join(root, 'tool'), 0o644);
    expect((await hashWorkspaceTree(root)).treeHash).not.toBe(plain.treeHash);
  });

  it.each([
    ['a link to a file', (dir: string) => symlinkSync('/etc/hostname', join(dir, 'deep/link'))],
    ['a link to a directory', (dir: string) => symlinkSync('/etc', join(dir, 'deep/etc'))],
    ['a dangling link', (dir: string) => symlinkSync('nowhere', join(dir, 'deep/dangling'))],
    ['a FIFO', (dir: string) => execFileSync('mkfifo', [join(dir, 'deep/pipe')])],
    ['a name with a newline', (dir: string) => writeFileSync(join(dir, 'deep/two\nlines'), 'x')],
    [
      'a name that is not UTF-8',
      (dir: string) => writeFileSync(Buffer.from(`${dir}/deep/\xff.bin`, 'latin1'), 'x'),
    ],
  ])('refuses a tree holding %s', async (_case, plant) => {
    mkdirSync(join(root, 'deep'));
    writeFileSync(join(root, 'deep/ok.txt'), 'fine');
    plant(root);
    const error = await refusal(root);
    expect(error).toBeInstanceOf(WorkspaceTreeRefusedError);
    expect(error).toMatchObject({ code: 'workspace-tree-refused' });
  });

  it('refuses a Workspace root that is itself a link', async () => {
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'alias'));
    expect(await refusal(join(root, 'alias'))).toBeInstanceOf(WorkspaceTreeRefusedError);
  });
});
