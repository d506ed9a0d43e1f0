// The version 2 output document (Source Control's AWSCAPT2 format): one byte string that retains the
// manifest, the Git patch and the binary file package of a captured repository.
//
//   offset  size  field
//   0       8     magic, ASCII "AWSCAPT2"
//   8       4     manifest length M, u32 big-endian, 1 <= M <= MAX_MANIFEST_BYTES
//   12      4     patch length P, u32 big-endian, 0 <= P <= MAX_PATCH_BYTES
//   16      8     package length K, u64 big-endian, 4 <= K <= MAX_PACKAGE_BYTES
//   24      M     manifest: canonical JSON (document-manifest.ts)
//   24+M    P     Git patch (git-binary-patch.ts)
//   24+M+P  K     binary file package (file-package.ts)
//
// and nothing else: the document is exactly 24 + M + P + K bytes. Parsing checks every length, the
// manifest's schema and canonical form, both section digests the manifest records, every file's
// SHA-256 and Git blob ID, that the package and the manifest list the same files, that only declared
// outputs differ from the baseline, the limits, and that the patch carries exactly the added and
// changed outputs. Serializing checks the same before it answers bytes, so no code path can produce a
// document that parsing would refuse. A document is referred to by its SHA-256 and length.
import { canonicalJson } from '../../lib/canonical-json.ts';
import { refuse } from './document-errors.ts';
import {
  HEADER_BYTES,
  MAGIC,
  MAX_DOCUMENT_BYTES,
  MAX_FILES,
  MAX_MANIFEST_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_PACKAGE_BYTES,
  MAX_PATCH_BYTES,
  MAX_TOTAL_FILE_BYTES,
} from './document-limits.ts';
import {
  baselineDigest,
  baselineOf,
  encodeManifest,
  manifestSchema,
  type Manifest,
} from './document-manifest.ts';
import { decodePackage, sha256Of, type PackageEntry } from './file-package.ts';
import { gitBlobId, readBinaryPatch } from './git-binary-patch.ts';

export interface OutputDocument {
  manifest: Manifest;
  patch: Uint8Array;
  package: Uint8Array;
}

/** A parsed document: its sections, and the package's files (views into the package bytes). */
export interface ParsedDocument extends OutputDocument {
  files: PackageEntry[];
}

export interface DocumentReference {
  sha256: string;
  length: number;
}

export function documentReference(bytes: Uint8Array): DocumentReference {
  return { sha256: sha256Of(bytes), length: bytes.length };
}

const view = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);

function readHeader(bytes: Buffer): { manifest: number; patch: number; package: number } {
  if (bytes.length < HEADER_BYTES) refuse('truncated', 'the document is shorter than its header');
  if (bytes.subarray(0, 8).toString('latin1') !== MAGIC)
    refuse('invalid-header', `the magic is not ${MAGIC}`);
  const manifest = bytes.readUInt32BE(8);
  const patch = bytes.readUInt32BE(12);
  const pkg = bytes.readBigUInt64BE(16);
  if (manifest < 1 || manifest > MAX_MANIFEST_BYTES)
    refuse('invalid-length', 'the manifest length is out of range');
  if (patch > MAX_PATCH_BYTES) refuse('invalid-length', 'the patch length is out of range');
  if (pkg < 4n || pkg > BigInt(MAX_PACKAGE_BYTES))
    refuse('invalid-length', 'the package length is out of range');
  return { manifest, patch, package: Number(pkg) };
}

function parseManifest(bytes: Buffer): Manifest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return refuse('malformed-manifest', 'the manifest is not UTF-8 JSON');
  }
  const parsed = manifestSchema.safeParse(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const at =
      first === undefined ? '' : ` at ${first.path.map(String).join('.') || '(root)'}: ${first.message}`;
    return refuse('malformed-manifest', `the manifest does not match its schema${at}`);
  }
  if (!encodeManifest(parsed.data).equals(bytes))
    refuse('malformed-manifest', 'the manifest is not canonical JSON');
  return parsed.data;
}

/** Parses and fully checks a document; its sections are views into `bytes`. */
export function parseDocument(bytes: Uint8Array): ParsedDocument {
  const all = view(bytes);
  if (all.length > MAX_DOCUMENT_BYTES)
    refuse('invalid-length', `the document exceeds ${MAX_DOCUMENT_BYTES} bytes`);
  const lengths = readHeader(all);
  const end = HEADER_BYTES + lengths.manifest + lengths.patch + lengths.package;
  if (all.length < end)
    refuse('truncated', `the document is ${end - all.length} bytes short of its sections`);
  if (all.length > end) refuse('trailing-bytes', `${all.length - end} bytes follow the package`);
  const manifestEnd = HEADER_BYTES + lengths.manifest;
  const patchEnd = manifestEnd + lengths.patch;
  const manifest = parseManifest(all.subarray(HEADER_BYTES, manifestEnd));
  const document = {
    manifest,
    patch: all.subarray(manifestEnd, patchEnd),
    package: all.subarray(patchEnd, end),
  };
  return { ...document, files: checkSections(document) };
}

/**
 * The document's bytes, after checking that the manifest records the sections' digests and lengths
 * and that the whole would parse. `manifest` is the saved manifest; it is written as canonical JSON.
 */
export function serializeDocument(document: OutputDocument): Buffer {
  const manifest = manifestSchema.safeParse(document.manifest);
  if (!manifest.success) refuse('malformed-manifest', 'the manifest does not match its schema');
  const manifestBytes = encodeManifest(manifest.data);
  if (manifestBytes.length > MAX_MANIFEST_BYTES)
    refuse('limit-exceeded', 'the manifest exceeds its section limit');
  checkSections({ manifest: manifest.data, patch: document.patch, package: document.package });
  const header = Buffer.alloc(HEADER_BYTES);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32BE(manifestBytes.length, 8);
  header.writeUInt32BE(document.patch.length, 12);
  header.writeBigUInt64BE(BigInt(document.package.length), 16);
  return Buffer.concat([header, manifestBytes, view(document.patch), view(document.package)]);
}

function checkSectionDigest(
  name: 'patch' | 'package',
  recorded: { sha256: string; length: number },
  bytes: Uint8Array,
) {
  if (recorded.length !== bytes.length || recorded.sha256 !== sha256Of(bytes)) {
    refuse(
      'section-digest-mismatch',
      `the ${name} does not match the digest and length the manifest records`,
    );
  }
}

/** Everything but the framing: digests, package, manifest consistency, limits, patch. */
function checkSections(document: OutputDocument): PackageEntry[] {
  const { manifest } = document;
  if (document.patch.length > MAX_PATCH_BYTES)
    refuse('limit-exceeded', 'the patch exceeds its section limit');
  if (document.package.length > MAX_PACKAGE_BYTES)
    refuse('limit-exceeded', 'the package exceeds its section limit');
  checkSectionDigest('patch', manifest.patch, document.patch);
  checkSectionDigest('package', manifest.package, document.package);
  const entries = decodePackage(document.package);
  checkFiles(manifest, entries);
  checkPatch(manifest, entries, document.patch);
  return entries;
}

function checkFiles(manifest: Manifest, entries: readonly PackageEntry[]): void {
  const { files } = manifest;
  if (files.length !== entries.length) {
    refuse(
      'package-manifest-mismatch',
      `the manifest lists ${files.length} files, the package holds ${entries.length}`,
    );
  }
  let bytes = 0;
  let outputBytes = 0;
  files.forEach((file, i) => {
    const entry = entries[i]!;
    if (
      file.path !== entry.path ||
      file.mode !== entry.mode ||
      file.size !== entry.content.length ||
      file.sha256 !== entry.sha256
    ) {
      refuse(
        'package-manifest-mismatch',
        `file ${i} differs between the manifest and the package`,
        entry.path,
      );
    }
    if (gitBlobId(entry.content) !== file.blobId)
      refuse('file-digest-mismatch', 'the Git blob ID does not match the content', file.path);
    checkChange(file);
    bytes += file.size;
    if (file.output) outputBytes += file.size;
  });
  if (files.length > MAX_FILES) refuse('limit-exceeded', `more than ${MAX_FILES} files`);
  if (bytes > MAX_TOTAL_FILE_BYTES)
    refuse('limit-exceeded', `more than ${MAX_TOTAL_FILE_BYTES} bytes of file content`);
  if (outputBytes > MAX_OUTPUT_BYTES)
    refuse('limit-exceeded', `more than ${MAX_OUTPUT_BYTES} bytes of declared outputs`);
  const totals = { files: files.length, bytes, outputBytes };
  if (canonicalJson(totals) !== canonicalJson(manifest.totals))
    refuse('inconsistent-manifest', 'the totals do not match the files');
  const baseline = baselineOf(files);
  const recorded = {
    files: baseline.length,
    bytes: baseline.reduce((sum, f) => sum + f.size, 0),
    sha256: baselineDigest(baseline),
  };
  if (canonicalJson(recorded) !== canonicalJson(manifest.baseline)) {
    refuse('inconsistent-manifest', 'the baseline the files imply does not match the recorded baseline');
  }
}

function checkChange(file: Manifest['files'][number]): void {
  const { before } = file;
  if (file.change === 'modified') {
    if (before === undefined) refuse('inconsistent-manifest', 'a modified file names no baseline', file.path);
    if (before.mode === file.mode && before.sha256 === file.sha256) {
      refuse('inconsistent-manifest', 'a modified file equals its baseline', file.path);
    }
  } else if (before !== undefined) {
    refuse('inconsistent-manifest', `an ${file.change} file names a baseline`, file.path);
  }
  if (!file.output && file.change === 'modified')
    refuse('changed-undeclared-file', 'an undeclared file changed', file.path);
  if (!file.output && file.change === 'added')
    refuse('undeclared-additional-file', 'an undeclared file was added', file.path);
}

/** The patch carries exactly the added and changed outputs, in order, with the package's content. */
function checkPatch(manifest: Manifest, entries: readonly PackageEntry[], patch: Uint8Array): void {
  const expected = manifest.files.flatMap((file, i) =>
    file.change === 'unchanged' ? [] : [{ file, entry: entries[i]! }],
  );
  const patched = readBinaryPatch(patch, MAX_OUTPUT_BYTES);
  if (patched.length !== expected.length) {
    refuse(
      'malformed-patch',
      `the patch holds ${patched.length} files, the manifest changes ${expected.length}`,
    );
  }
  patched.forEach((p, i) => {
    const { file, entry } = expected[i]!;
    const before = file.before === undefined ? null : { mode: file.before.mode, blobId: file.before.blobId };
    const same =
      p.path === file.path &&
      p.mode === file.mode &&
      p.blobId === file.blobId &&
      p.content.length === entry.content.length &&
      canonicalJson(p.before) === canonicalJson(before);
    if (!same) refuse('malformed-patch', 'a patched file does not match the manifest', file.path);
  });
}
