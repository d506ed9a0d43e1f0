// Builds the output document of a version 2 capture from what Source Control knows of the accepted
// seed (its baseline inventory) and what the collector read (the complete tree, root `.git`
// excluded), with each declared output's evidence from the collector receipt. The full package
// keeps every baseline file and every declared output; refused are a missing baseline file, a
// changed undeclared file, an undeclared additional file, a missing output and an output that
// differs from its evidence, and anything past the complete-tree limits.
import { refuse } from './document-errors.ts';
import { MAGIC, MAX_FILES, MAX_OUTPUT_BYTES, MAX_TOTAL_FILE_BYTES } from './document-limits.ts';
import {
  baselineDigest,
  baselineEntrySchema,
  type BaselineEntry,
  type Manifest,
  type ManifestFile,
} from './document-manifest.ts';
import { encodePackage, fileModes, sha256Of, type PackageFile } from './file-package.ts';
import { gitBlobId, writeBinaryPatch, type PatchChange } from './git-binary-patch.ts';
import { documentReference, serializeDocument, type DocumentReference } from './output-document.ts';
import { pathProblem, sortByPath } from './repository-path.ts';

export interface DeclaredOutput {
  path: string;
  /** What the collector receipt says of the file. */
  evidence: { size: number; sha256: string };
}

export interface ConstructInput {
  binding: Manifest['binding'];
  source: Manifest['source'];
  /** The accepted seed's tree. */
  baseline: readonly BaselineEntry[];
  /** Every regular file the collector read. */
  collected: readonly PackageFile[];
  /** The command's declared outputs (version 2 may declare none). */
  outputs: readonly DeclaredOutput[];
}

export interface ConstructedDocument {
  bytes: Buffer;
  reference: DocumentReference;
  manifest: Manifest;
}

function byPath<T extends { path: string }>(items: readonly T[], what: string): Map<string, T> {
  const map = new Map<string, T>();
  for (const item of items) {
    const problem = pathProblem(item.path);
    if (problem !== undefined) refuse('invalid-path', `a ${what} path ${problem}`, item.path);
    if (map.has(item.path)) refuse('duplicate-path', `the ${what} names a path twice`, item.path);
    map.set(item.path, item);
  }
  return map;
}

function checkTreeLimits(files: number, bytes: number, what: string): void {
  if (files > MAX_FILES) refuse('limit-exceeded', `the ${what} holds ${files} files (at most ${MAX_FILES})`);
  if (bytes > MAX_TOTAL_FILE_BYTES) {
    refuse('limit-exceeded', `the ${what} holds ${bytes} bytes of content (at most ${MAX_TOTAL_FILE_BYTES})`);
  }
}

export function constructDocument(input: ConstructInput): ConstructedDocument {
  for (const entry of input.baseline) {
    if (!baselineEntrySchema.safeParse(entry).success)
      refuse('invalid-inventory', 'a baseline entry is malformed', entry.path);
  }
  const baseline = byPath(input.baseline, 'baseline');
  const collected = byPath(input.collected, 'collected tree');
  const outputs = byPath(input.outputs, 'declared output');
  for (const file of input.collected) {
    if (!(fileModes as readonly string[]).includes(file.mode) || !(file.content instanceof Uint8Array)) {
      refuse('invalid-inventory', 'a collected file is not a regular file with content', file.path);
    }
  }
  checkTreeLimits(
    input.baseline.length,
    input.baseline.reduce((n, f) => n + f.size, 0),
    'baseline',
  );
  checkTreeLimits(
    input.collected.length,
    input.collected.reduce((n, f) => n + f.content.length, 0),
    'collected tree',
  );

  for (const { path } of sortByPath(input.baseline)) {
    if (!collected.has(path))
      refuse('missing-baseline-file', 'a baseline file is missing from the tree', path);
  }
  let outputBytes = 0;
  for (const output of sortByPath(input.outputs)) {
    const file = collected.get(output.path);
    if (file === undefined)
      refuse('missing-output', 'a declared output is missing from the tree', output.path);
    if (file.content.length !== output.evidence.size || sha256Of(file.content) !== output.evidence.sha256) {
      refuse('output-evidence-mismatch', 'a declared output differs from its evidence', output.path);
    }
    outputBytes += file.content.length;
  }
  if (outputBytes > MAX_OUTPUT_BYTES) {
    refuse('limit-exceeded', `the declared outputs hold ${outputBytes} bytes (at most ${MAX_OUTPUT_BYTES})`);
  }

  const sorted = sortByPath(input.collected);
  const files: ManifestFile[] = [];
  const changes: PatchChange[] = [];
  for (const file of sorted) {
    const described = describe(file, baseline.get(file.path), outputs.has(file.path));
    files.push(described);
    if (described.change !== 'unchanged') {
      const before =
        described.before === undefined
          ? null
          : { mode: described.before.mode, blobId: described.before.blobId };
      changes.push({ path: file.path, mode: file.mode, content: file.content, before });
    }
  }

  const patch = writeBinaryPatch(changes);
  const pkg = encodePackage(sorted);
  const manifest: Manifest = {
    format: MAGIC,
    binding: input.binding,
    source: input.source,
    baseline: {
      files: input.baseline.length,
      bytes: input.baseline.reduce((n, f) => n + f.size, 0),
      sha256: baselineDigest(input.baseline),
    },
    totals: {
      files: files.length,
      bytes: files.reduce((n, f) => n + f.size, 0),
      outputBytes,
    },
    patch: documentReference(patch),
    package: documentReference(pkg),
    files,
  };
  const bytes = serializeDocument({ manifest, patch, package: pkg });
  return { bytes, reference: documentReference(bytes), manifest };
}

/** One collected file as the manifest lists it, refusing what only an output may do. */
function describe(file: PackageFile, was: BaselineEntry | undefined, output: boolean): ManifestFile {
  const sha256 = sha256Of(file.content);
  const blobId = gitBlobId(file.content);
  const common = {
    path: file.path,
    mode: file.mode,
    size: file.content.length,
    sha256,
    blobId,
    output,
  };
  if (was === undefined) {
    if (!output)
      refuse(
        'undeclared-additional-file',
        'a file that is neither baseline nor output is in the tree',
        file.path,
      );
    return { ...common, change: 'added' };
  }
  if (was.sha256 === sha256 && (was.blobId !== blobId || was.size !== file.content.length)) {
    refuse('invalid-inventory', "a baseline entry's blob ID or size does not match its SHA-256", file.path);
  }
  if (was.sha256 === sha256 && was.mode === file.mode) return { ...common, change: 'unchanged' };
  if (!output) refuse('changed-undeclared-file', 'an undeclared baseline file changed', file.path);
  return {
    ...common,
    change: 'modified',
    before: { mode: was.mode, size: was.size, sha256: was.sha256, blobId: was.blobId },
  };
}
