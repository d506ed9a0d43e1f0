// The document's Git patch: for each declared output that was added or changed, one `git apply`-able
// binary diff carrying the new content as a literal (zlib-deflated, Git's base85). It needs neither
// the old content nor a line diff: only the baseline's blob ID, which `git apply` checks against the
// file it patches (full index lines, as Git requires for binary patches). The reverse hunk Git would
// add is left out; Git treats it as optional.
//
//   diff --git a/<path> b/<path>
//   new file mode <mode>                          (an added file)
//   index 0000000000000000000000000000000000000000..<new blob>
// or
//   old mode <mode>                               (a changed file whose mode changed)
//   new mode <mode>
//   index <old blob>..<new blob>
// or
//   index <old blob>..<new blob> <mode>           (a changed file, same mode)
// then
//   GIT binary patch
//   literal <size>
//   <base85 lines>
//   (an empty line)
//
// A path holding `"` or `\` is written C-quoted (`"a/x\"y"`), as Git writes it; other paths as they
// are (control characters never occur in a repository path). Reading accepts exactly this format.
import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { refuse } from './document-errors.ts';
import { fileModes, type FileMode } from './file-package.ts';

export const NULL_BLOB = '0'.repeat(40);

/** Git's object ID of a blob with this content (SHA-1 of `blob <size>\0<content>`). */
export function gitBlobId(content: Uint8Array): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export interface PatchChange {
  path: string;
  mode: FileMode;
  content: Uint8Array;
  /** The baseline file it replaces; null for an added file. */
  before: { mode: FileMode; blobId: string } | null;
}

/** What reading a patch yields for each file: `blobId` is checked against the decoded content. */
export interface PatchedFile {
  path: string;
  mode: FileMode;
  blobId: string;
  content: Uint8Array;
  before: { mode: FileMode; blobId: string } | null;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';
const DIGIT = new Map([...ALPHABET].map((c, i) => [c, i]));
/** Git's line width: up to 52 bytes of deflated data per line. */
const LINE_BYTES = 52;

function base85Line(bytes: Uint8Array): string {
  const n = bytes.length;
  let line = n <= 26 ? String.fromCharCode(64 + n) : String.fromCharCode(96 + n - 26);
  for (let i = 0; i < n; i += 4) {
    let value = 0;
    for (let j = 0; j < 4; j += 1) value = value * 256 + (bytes[i + j] ?? 0);
    const group: string[] = [];
    for (let k = 0; k < 5; k += 1) {
      group.unshift(ALPHABET[value % 85]!);
      value = Math.floor(value / 85);
    }
    line += group.join('');
  }
  return line;
}

function quotePath(prefix: 'a/' | 'b/', path: string): string {
  if (!path.includes('"') && !path.includes('\\')) return `${prefix}${path}`;
  return `"${prefix}${path.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** The patch for `changes`, which come in the document's path order. */
export function writeBinaryPatch(changes: readonly PatchChange[]): Buffer {
  const parts: string[] = [];
  for (const change of changes) {
    const blobId = gitBlobId(change.content);
    const lines = [`diff --git ${quotePath('a/', change.path)} ${quotePath('b/', change.path)}`];
    if (change.before === null) {
      lines.push(`new file mode ${change.mode}`, `index ${NULL_BLOB}..${blobId}`);
    } else if (change.before.mode !== change.mode) {
      lines.push(`old mode ${change.before.mode}`, `new mode ${change.mode}`);
      lines.push(`index ${change.before.blobId}..${blobId}`);
    } else {
      lines.push(`index ${change.before.blobId}..${blobId} ${change.mode}`);
    }
    lines.push('GIT binary patch', `literal ${change.content.length}`);
    const deflated = deflateSync(change.content);
    for (let i = 0; i < deflated.length; i += LINE_BYTES) {
      lines.push(base85Line(deflated.subarray(i, i + LINE_BYTES)));
    }
    lines.push('', '');
    parts.push(lines.join('\n'));
  }
  return Buffer.from(parts.join(''), 'utf8');
}

function malformed(message: string, path?: string): never {
  return refuse('malformed-patch', message, path);
}

function decodeBase85Line(line: string): Buffer {
  const marker = line.charCodeAt(0);
  const n = marker >= 65 && marker <= 90 ? marker - 64 : marker >= 97 && marker <= 122 ? marker - 70 : 0;
  if (n === 0 || line.length !== 1 + Math.ceil(n / 4) * 5) malformed('a binary data line is malformed');
  const out = Buffer.alloc(Math.ceil(n / 4) * 4);
  for (let g = 0; g * 5 + 1 < line.length; g += 1) {
    let value = 0;
    for (let k = 0; k < 5; k += 1) {
      const digit = DIGIT.get(line[1 + g * 5 + k]!);
      if (digit === undefined) malformed('a binary data line holds a character outside base85');
      value = value * 85 + digit;
    }
    if (value > 0xffffffff) malformed('a binary data group overflows 32 bits');
    out.writeUInt32BE(value, g * 4);
  }
  return out.subarray(0, n);
}

const BLOB = /^[0-9a-f]{40}$/;
const isMode = (value: string): value is FileMode => (fileModes as readonly string[]).includes(value);

const QUOTED = /^"((?:[^"\\]|\\["\\])*)"/;

function unquote(text: string): { value: string; rest: string } {
  const match = QUOTED.exec(text);
  if (match === null) malformed('a quoted path is malformed');
  return { value: match[1]!.replace(/\\(["\\])/g, '$1'), rest: text.slice(match[0].length) };
}

/** The one path a `diff --git` line names (both sides must agree). */
function headerPath(names: string): string {
  let a: string;
  let b: string;
  if (names.startsWith('"')) {
    const first = unquote(names);
    if (!first.rest.startsWith(' "')) malformed('a quoted diff header is malformed');
    const second = unquote(first.rest.slice(1));
    if (second.rest !== '') malformed('a quoted diff header is malformed');
    [a, b] = [first.value, second.value];
  } else {
    // Unquoted, `a/<path> b/<path>`: the two names have the same length.
    const half = (names.length - 1) / 2;
    if (!Number.isInteger(half) || names[half] !== ' ') malformed('a diff header names two different paths');
    [a, b] = [names.slice(0, half), names.slice(half + 1)];
    if (/["\\]/.test(a)) malformed('a path holding a quote or backslash is not quoted');
  }
  if (!a.startsWith('a/') || !b.startsWith('b/') || a.slice(2) !== b.slice(2)) {
    malformed('a diff header names two different paths');
  }
  return a.slice(2);
}

/** Reads a patch written by writeBinaryPatch; every literal is inflated and checked against its blob ID. */
export function readBinaryPatch(bytes: Uint8Array, maxContentBytes: number): PatchedFile[] {
  if (bytes.length === 0) return [];
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return malformed('the patch is not UTF-8');
  }
  if (!text.endsWith('\n\n')) malformed('the patch does not end with an empty line');
  const lines = text.slice(0, -1).split('\n');
  const files: PatchedFile[] = [];
  let i = 0;
  const next = (): string => {
    const line = lines[i];
    if (line === undefined) malformed('the patch ends inside a file');
    i += 1;
    return line;
  };
  while (i < lines.length) {
    const header = next();
    if (!header.startsWith('diff --git ')) malformed('expected a diff --git line');
    const path = headerPath(header.slice('diff --git '.length));
    let line = next();
    let mode: string;
    let before: { mode: FileMode; blobId: string } | null;
    let index: RegExpExecArray | null;
    if (line.startsWith('new file mode ')) {
      mode = line.slice('new file mode '.length);
      index = /^index (0{40})\.\.([0-9a-f]{40})$/.exec(next());
      before = null;
    } else if (line.startsWith('old mode ')) {
      const oldMode = line.slice('old mode '.length);
      line = next();
      if (!line.startsWith('new mode ')) malformed('an old mode line is not followed by a new mode', path);
      mode = line.slice('new mode '.length);
      index = /^index ([0-9a-f]{40})\.\.([0-9a-f]{40})$/.exec(next());
      if (!isMode(oldMode) || oldMode === mode) malformed('the mode change is malformed', path);
      before = { mode: oldMode, blobId: index?.[1] ?? '' };
    } else {
      index = /^index ([0-9a-f]{40})\.\.([0-9a-f]{40}) (\d{6})$/.exec(line);
      mode = index?.[3] ?? '';
      before = { mode: mode as FileMode, blobId: index?.[1] ?? '' };
    }
    if (index === null || !isMode(mode)) malformed('the index or mode line is malformed', path);
    if (before !== null && (before.blobId === NULL_BLOB || !BLOB.test(before.blobId))) {
      malformed('a changed file names no baseline blob', path);
    }
    if (next() !== 'GIT binary patch') malformed('expected GIT binary patch', path);
    const literal = /^literal (0|[1-9]\d{0,9})$/.exec(next());
    const size = Number(literal?.[1] ?? NaN);
    if (!Number.isSafeInteger(size) || size > maxContentBytes)
      malformed('the literal size is malformed', path);
    const chunks: Buffer[] = [];
    for (line = next(); line !== ''; line = next()) chunks.push(decodeBase85Line(line));
    let content: Buffer;
    try {
      content = inflateSync(Buffer.concat(chunks), { maxOutputLength: Math.max(1, size) });
    } catch {
      return malformed('a literal does not inflate within its declared size', path);
    }
    if (content.length !== size) malformed('a literal inflates to another size than declared', path);
    const blobId = index[2]!;
    if (gitBlobId(content) !== blobId) malformed("a literal does not match its index line's blob", path);
    files.push({ path, mode, blobId, content, before });
  }
  return files;
}
