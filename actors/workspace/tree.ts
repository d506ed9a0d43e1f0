// The Workspace tree hash: one SHA-256 that names the exact content of a Workspace directory, so a
// flush can say what it persisted and a resume can prove it got the same tree back.
//
//   tree  := "sandlot-workspace-tree-v1\n" line*
//   line  := mode " " size " " sha256 " " path "\n"
//
// One line per regular file, in the byte order of the UTF-8 paths (comparePaths). `path` is
// relative to the Workspace root, `/`-separated, and holds no control character (so the line is
// unambiguous); `mode` is Git's 100755 when the owner may execute the file, else 100644; `size` is
// decimal bytes; `sha256` is lower-case hex of the content. Directories appear only through their
// files (an empty directory adds nothing). A symbolic link, socket, FIFO or device anywhere in the
// tree, or a name that is not UTF-8, refuses the whole tree: no link is ever followed, and a tree
// we cannot describe exactly has no hash.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileMode } from '../../formats/awscapt2/file-package.ts';
import { sortByPath } from '../../formats/awscapt2/repository-path.ts';
import { problemClass } from '../../lib/errors.ts';

export const WORKSPACE_TREE_FORMAT = 'sandlot-workspace-tree-v1';

export interface WorkspaceTreeEntry {
  path: string;
  mode: FileMode;
  size: number;
  sha256: string;
}

export interface WorkspaceTreeDigest {
  /** SHA-256 (hex) of the canonical tree text. */
  treeHash: string;
  fileCount: number;
  byteCount: number;
}

export class WorkspaceTreeRefusedError extends problemClass({
  code: 'workspace-tree-refused',
  status: 409,
  title: 'Workspace tree refused',
}) {}

/** The digest of entries already read (in any order): the one place the canonical text is made. */
export function digestOfEntries(entries: readonly WorkspaceTreeEntry[]): WorkspaceTreeDigest {
  const hash = createHash('sha256').update(`${WORKSPACE_TREE_FORMAT}\n`);
  let byteCount = 0;
  for (const entry of sortByPath(entries)) {
    hash.update(`${entry.mode} ${entry.size} ${entry.sha256} ${entry.path}\n`, 'utf8');
    byteCount += entry.size;
  }
  return { treeHash: hash.digest('hex'), fileCount: entries.length, byteCount };
}

/** Reads the tree under `root` without following any link and answers its digest. */
export async function hashWorkspaceTree(root: string): Promise<WorkspaceTreeDigest> {
  const top = await lstat(root);
  if (!top.isDirectory()) throw new WorkspaceTreeRefusedError('the Workspace root is not a directory');
  const entries: WorkspaceTreeEntry[] = [];
  await walk(root, '', entries);
  return digestOfEntries(entries);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function walk(root: string, prefix: string, into: WorkspaceTreeEntry[]): Promise<void> {
  const names = await readdir(join(root, prefix), { encoding: 'buffer' });
  for (const raw of names) {
    let name: string;
    try {
      name = utf8.decode(raw);
    } catch {
      throw new WorkspaceTreeRefusedError(`a name under "${prefix || '.'}" is not UTF-8`);
    }
    const path = prefix === '' ? name : `${prefix}/${name}`;
    // eslint-disable-next-line no-control-regex -- control characters would make a line ambiguous
    if (/[\u0000-\u001f\u007f]/.test(name)) {
      throw new WorkspaceTreeRefusedError(`a name under "${prefix || '.'}" holds a control character`);
    }
    const stats = await lstat(join(root, path));
    if (stats.isDirectory()) await walk(root, path, into);
    else if (stats.isFile()) into.push(await fileEntry(root, path, stats.mode));
    else throw new WorkspaceTreeRefusedError(`"${path}" is a link or special file`);
  }
}

/** Hashes one regular file opened without following a link, and checks it held still meanwhile. */
async function fileEntry(root: string, path: string, mode: number): Promise<WorkspaceTreeEntry> {
  const handle = await open(join(root, path), constants.O_RDONLY | constants.O_NOFOLLOW).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ELOOP') throw new WorkspaceTreeRefusedError(`"${path}" became a link`);
      throw error;
    },
  );
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw new WorkspaceTreeRefusedError(`"${path}" is not a regular file`);
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of handle.createReadStream({ autoClose: false })) {
      const bytes = chunk as Buffer;
      size += bytes.length;
      hash.update(bytes);
    }
    if (size !== opened.size) throw new WorkspaceTreeRefusedError(`"${path}" changed while it was read`);
    return { path, mode: (mode & 0o100) !== 0 ? '100755' : '100644', size, sha256: hash.digest('hex') };
  } finally {
    await handle.close();
  }
}
