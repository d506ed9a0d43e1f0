// The simulated collector's read of a prepared repository: every regular file under the root, the
// root `.git` directory alone excluded, read without following a link. What a faithful capture cannot
// carry is refused, never skipped: a symlink, a FIFO, socket or device, a nested mount (another
// device), a name that is not UTF-8 or not a repository path, a file that changed between its stat
// and its read, and a tree past the complete-tree limits.
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_FILES, MAX_TOTAL_FILE_BYTES } from '../../formats/awscapt2/document-limits.ts';
import type { PackageFile } from '../../formats/awscapt2/file-package.ts';
import { pathProblem } from '../../formats/awscapt2/repository-path.ts';

/** The tree cannot be captured as it is; the message names the path, never content. */
export class CaptureRefused extends Error {
  override readonly name = 'CaptureRefused';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Git's mode of a regular file: executable when its owner may execute it. */
const modeOf = (stats: Stats): PackageFile['mode'] => ((stats.mode & 0o100) !== 0 ? '100755' : '100644');

function kindOf(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symlink';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return 'a device';
  return 'a special file';
}

/** The identity of a directory the walk passed through: a swap for another (or a link) changes it. */
interface DirIdentity {
  dev: number;
  ino: number;
}

const identityOf = (stats: Stats): DirIdentity => ({ dev: stats.dev, ino: stats.ino });

/**
 * The directories from the root down to `relative` (a path of directories), each read with lstat
 * and never followed: a symlink, or anything but a directory on the root's device, anywhere on the
 * way is refused. `expected`, when given, is the chain an earlier look saw; a difference means a
 * component was swapped since, which is refused too.
 */
async function directoryChain(
  root: string,
  relative: string,
  rootStats: Stats,
  expected?: readonly DirIdentity[],
): Promise<DirIdentity[]> {
  const chain: DirIdentity[] = [identityOf(await lstat(root))];
  const parts = relative === '' ? [] : relative.split('/');
  for (let i = 0; i < parts.length; i++) {
    const prefix = parts.slice(0, i + 1).join('/');
    const stats = await lstat(join(root, prefix));
    if (stats.isFile()) {
      // A file where a directory is named: nothing lies below it (readOutputs reports it missing).
      throw Object.assign(new Error(`${prefix} is a file, not a directory`), { code: 'ENOTDIR' });
    }
    if (!stats.isDirectory()) throw new CaptureRefused(`${prefix} is ${kindOf(stats)}, not a directory`);
    if (stats.dev !== rootStats.dev) throw new CaptureRefused(`${prefix} is on another mount`);
    chain.push(identityOf(stats));
  }
  if (expected !== undefined) {
    const same =
      expected.length === chain.length &&
      expected.every((id, i) => id.dev === chain[i]!.dev && id.ino === chain[i]!.ino);
    if (!same)
      throw new CaptureRefused(`${relative === '' ? 'the root' : relative} changed while it was read`);
  }
  return chain;
}

const parentOf = (path: string): string => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');

/** Every regular file of the repository at `root`, in walk order (construct sorts them). */
export async function collectTree(root: string, signal: AbortSignal): Promise<PackageFile[]> {
  const rootStats = await lstat(root);
  if (!rootStats.isDirectory()) throw new CaptureRefused('the prepared repository is not a directory');
  const files: PackageFile[] = [];
  let bytes = 0;
  // Each directory with the chain of directories the walk saw down to it: readdir and open follow
  // links in the components of their path, so the chain is read again, unfollowed, before each
  // directory is listed and after each file is read, and a component swapped meanwhile is refused.
  const pending: { relative: string; chain: DirIdentity[] }[] = [
    { relative: '', chain: [identityOf(rootStats)] },
  ];
  while (pending.length > 0) {
    signal.throwIfAborted();
    const { relative, chain } = pending.pop()!;
    await directoryChain(root, relative, rootStats, chain);
    const names = await readdir(join(root, relative), { encoding: 'buffer' });
    await directoryChain(root, relative, rootStats, chain);
    for (const raw of names) {
      let name: string;
      try {
        name = utf8.decode(raw);
      } catch {
        throw new CaptureRefused(`a name under ${relative === '' ? 'the root' : relative} is not UTF-8`);
      }
      if (relative === '' && name === '.git') continue;
      const path = relative === '' ? name : `${relative}/${name}`;
      const problem = pathProblem(path);
      if (problem !== undefined) throw new CaptureRefused(`the path ${JSON.stringify(path)} ${problem}`);
      const stats = await lstat(join(root, path));
      if (stats.dev !== rootStats.dev) throw new CaptureRefused(`${path} is on another mount`);
      if (stats.isDirectory()) {
        pending.push({ relative: path, chain: [...chain, identityOf(stats)] });
        continue;
      }
      if (!stats.isFile()) throw new CaptureRefused(`${path} is ${kindOf(stats)}`);
      bytes += stats.size;
      if (files.length + 1 > MAX_FILES)
        throw new CaptureRefused(`the tree holds more than ${MAX_FILES} files`);
      if (bytes > MAX_TOTAL_FILE_BYTES) {
        throw new CaptureRefused(`the tree holds more than ${MAX_TOTAL_FILE_BYTES} bytes of content`);
      }
      const content = await readStable(root, path, stats);
      await directoryChain(root, relative, rootStats, chain);
      files.push({ path, mode: modeOf(stats), content });
    }
  }
  return files;
}

/**
 * Reads the declared outputs alone (version 1): each must be a regular file; a missing one is
 * reported as null, so the caller can fail the collector with `missing-output`.
 */
export async function readOutputs(
  root: string,
  paths: readonly string[],
): Promise<Map<string, Buffer | null>> {
  const read = new Map<string, Buffer | null>();
  const rootStats = await lstat(root);
  if (!rootStats.isDirectory()) throw new CaptureRefused('the prepared repository is not a directory');
  for (const path of paths) {
    const problem = pathProblem(path);
    if (problem !== undefined)
      throw new CaptureRefused(`the declared output ${JSON.stringify(path)} ${problem}`);
    let stats: Stats;
    let chain: DirIdentity[];
    try {
      // No component on the way to the output is followed: a directory swapped for a link to
      // elsewhere must not make a file outside the repository the evidence.
      chain = await directoryChain(root, parentOf(path), rootStats);
      stats = await lstat(join(root, path));
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) {
        read.set(path, null);
        continue;
      }
      throw error;
    }
    if (!stats.isFile()) throw new CaptureRefused(`the declared output ${path} is ${kindOf(stats)}`);
    const content = await readStable(root, path, stats);
    await directoryChain(root, parentOf(path), rootStats, chain);
    read.set(path, content);
  }
  return read;
}

const sameIdentity = (a: Stats, b: Stats): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.mode === b.mode;

/** The file's bytes, provided it is the file `seen` described before, during and after the read. */
async function readStable(root: string, path: string, seen: Stats): Promise<Buffer> {
  let handle: FileHandle;
  try {
    // O_NOFOLLOW: a file swapped for a link since the lstat is not followed; O_NONBLOCK: nor does a
    // file swapped for a FIFO block the read.
    handle = await open(join(root, path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new CaptureRefused(`${path} changed while it was read (${codeOf(error)})`);
  }
  try {
    const before = await handle.stat();
    if (!before.isFile() || !sameIdentity(seen, before))
      throw new CaptureRefused(`${path} changed while it was read`);
    const content = await handle.readFile();
    const after = await handle.stat();
    if (!sameIdentity(before, after) || content.length !== before.size) {
      throw new CaptureRefused(`${path} changed while it was read`);
    }
    return content;
  } finally {
    await handle.close();
  }
}

function codeOf(error: unknown): string {
  return error instanceof Error && 'code' in error ? String(error.code) : 'error';
}

function isCode(error: unknown, code: string): boolean {
  return codeOf(error) === code;
}
