// The binary file package: every file of the captured repository, content included, in path order.
//
//   package := count:u32 entry{count}
//   entry   := pathLength:u16 mode:u16 size:u32 sha256:32 bytes path:pathLength bytes content:size bytes
//
// Integers are big-endian; `mode` is Git's (0o100644 or 0o100755, which fit 16 bits); the path is
// a repository path (repository-path.ts) in UTF-8; paths are strictly ascending by their bytes, so
// a path appears once. Decoding checks the framing, the paths, the modes and every file's SHA-256,
// and requires the entries to use up the section exactly.
import { createHash } from 'node:crypto';
import { MAX_FILES, PACKAGE_ENTRY_HEADER_BYTES } from './document-limits.ts';
import { refuse } from './document-errors.ts';
import { pathProblem } from './repository-path.ts';

export const fileModes = ['100644', '100755'] as const;
export type FileMode = (typeof fileModes)[number];

export interface PackageFile {
  path: string;
  mode: FileMode;
  content: Uint8Array;
}

/** A decoded entry: its file and the SHA-256 the package declared for it (checked). */
export interface PackageEntry extends PackageFile {
  sha256: string;
}

const MODE_BITS: Record<FileMode, number> = { '100644': 0o100644, '100755': 0o100755 };

export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Encodes files already in strictly ascending path order (construct and serialize sort them). */
export function encodePackage(files: readonly PackageFile[]): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  count.writeUInt32BE(files.length);
  parts.push(count);
  let previous: Buffer | undefined;
  for (const file of files) {
    const problem = pathProblem(file.path);
    if (problem !== undefined) refuse('invalid-path', `the path ${problem}`, file.path);
    const path = Buffer.from(file.path, 'utf8');
    if (previous !== undefined && Buffer.compare(previous, path) >= 0) {
      refuse('duplicate-path', 'package files are not in strictly ascending path order', file.path);
    }
    previous = path;
    const header = Buffer.alloc(PACKAGE_ENTRY_HEADER_BYTES);
    header.writeUInt16BE(path.length, 0);
    header.writeUInt16BE(MODE_BITS[file.mode], 2);
    header.writeUInt32BE(file.content.length, 4);
    Buffer.from(sha256Of(file.content), 'hex').copy(header, 8);
    parts.push(header, path, Buffer.from(file.content.buffer, file.content.byteOffset, file.content.length));
  }
  return Buffer.concat(parts);
}

function malformed(message: string, path?: string): never {
  return refuse('malformed-package', message, path);
}

/** Decodes and checks a package section; contents are views into `bytes`, not copies. */
export function decodePackage(bytes: Uint8Array): PackageEntry[] {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (view.length < 4) malformed('the package is shorter than its file count');
  const count = view.readUInt32BE(0);
  if (count > MAX_FILES)
    refuse('limit-exceeded', `the package declares ${count} files (at most ${MAX_FILES})`);
  const entries: PackageEntry[] = [];
  let previousPath: Buffer | undefined;
  let offset = 4;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (let i = 0; i < count; i += 1) {
    if (view.length - offset < PACKAGE_ENTRY_HEADER_BYTES) malformed(`entry ${i} is truncated`);
    const pathLength = view.readUInt16BE(offset);
    const modeBits = view.readUInt16BE(offset + 2);
    const size = view.readUInt32BE(offset + 4);
    const declared = view.subarray(offset + 8, offset + PACKAGE_ENTRY_HEADER_BYTES).toString('hex');
    offset += PACKAGE_ENTRY_HEADER_BYTES;
    if (view.length - offset < pathLength + size) malformed(`entry ${i} is truncated`);
    const pathBytes = view.subarray(offset, offset + pathLength);
    let path: string;
    try {
      path = decoder.decode(pathBytes);
    } catch {
      return malformed(`entry ${i}'s path is not UTF-8`);
    }
    const problem = pathProblem(path);
    if (problem !== undefined) malformed(`entry ${i}'s path ${problem}`, path);
    const mode = fileModes.find((m) => MODE_BITS[m] === modeBits);
    if (mode === undefined)
      malformed(`entry ${i} has mode ${modeBits.toString(8)}, not a regular file`, path);
    if (previousPath !== undefined && Buffer.compare(previousPath, pathBytes) >= 0) {
      malformed(`entry ${i} is out of order or repeats a path`, path);
    }
    previousPath = pathBytes;
    offset += pathLength;
    const content = view.subarray(offset, offset + size);
    offset += size;
    if (sha256Of(content) !== declared) {
      refuse('file-digest-mismatch', `entry ${i}'s content does not match its SHA-256`, path);
    }
    entries.push({ path, mode, content, sha256: declared });
  }
  if (offset !== view.length) malformed(`${view.length - offset} bytes follow the last entry`);
  return entries;
}
