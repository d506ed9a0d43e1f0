// The manifest section of an output document: canonical JSON (keys sorted, no spaces, UTF-8) of
// this schema. It binds the document to its operation, checkpoint and request fingerprint and to
// the accepted seed, records the baseline inventory's digest, the patch's and package's digests and
// lengths, and lists every file of the package in the package's order, with what it was in the
// baseline. Only a declared output may differ from the baseline.
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import {
  MAX_FILES,
  MAX_OUTPUT_BYTES,
  MAX_PACKAGE_BYTES,
  MAX_PATCH_BYTES,
  MAX_TOTAL_FILE_BYTES,
  MAX_SEED_BYTES,
  MAGIC,
} from './document-limits.ts';
import { fileModes, type FileMode } from './file-package.ts';
import { pathProblem, sortByPath } from './repository-path.ts';

export const sha256HexSchema = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lower-case SHA-256 hex digest');
const blobIdSchema = z.string().regex(/^[0-9a-f]{40}$/, 'expected a 40-hex Git blob ID');
const size = z.number().int().min(0).max(MAX_TOTAL_FILE_BYTES);
const count = z.number().int().min(0).max(MAX_FILES);
const mode = z.enum(fileModes);
const repositoryPath = z.string().superRefine((p, ctx) => {
  const problem = pathProblem(p);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `the path ${problem}` });
});

/** One file of the baseline inventory: what the accepted seed's tree holds at `path`. */
export const baselineEntrySchema = z.strictObject({
  path: repositoryPath,
  mode,
  size,
  sha256: sha256HexSchema,
  blobId: blobIdSchema,
});
export type BaselineEntry = z.infer<typeof baselineEntrySchema>;

const manifestFileSchema = z.strictObject({
  path: repositoryPath,
  mode,
  size,
  sha256: sha256HexSchema,
  blobId: blobIdSchema,
  /** A declared output of the command. */
  output: z.boolean(),
  change: z.enum(['unchanged', 'modified', 'added']),
  /** The baseline file, present exactly when `change` is `modified`. */
  before: z.strictObject({ mode, size, sha256: sha256HexSchema, blobId: blobIdSchema }).optional(),
});
export type ManifestFile = z.infer<typeof manifestFileSchema>;

const section = (max: number) =>
  z.strictObject({ sha256: sha256HexSchema, length: z.number().int().min(0).max(max) });

export const manifestSchema = z.strictObject({
  format: z.literal(MAGIC),
  binding: z.strictObject({
    operationId: identifierSchema,
    checkpointId: identifierSchema,
    requestFingerprint: sha256HexSchema,
  }),
  source: z.strictObject({
    seedSha256: sha256HexSchema,
    seedLength: z.number().int().min(1).max(MAX_SEED_BYTES),
    baseSha: blobIdSchema,
  }),
  baseline: z.strictObject({ files: count, bytes: size, sha256: sha256HexSchema }),
  totals: z.strictObject({
    files: count,
    bytes: size,
    outputBytes: z.number().int().min(0).max(MAX_OUTPUT_BYTES),
  }),
  patch: section(MAX_PATCH_BYTES),
  package: section(MAX_PACKAGE_BYTES),
  files: z.array(manifestFileSchema).max(MAX_FILES),
});
export type Manifest = z.infer<typeof manifestSchema>;

/** The manifest's bytes in the document. */
export function encodeManifest(manifest: Manifest): Buffer {
  return Buffer.from(canonicalJson(manifest), 'utf8');
}

/**
 * SHA-256 of the baseline inventory's canonical JSON, its entries in path order: what Source Control
 * computes from the accepted seed's tree and what a document's manifest records.
 */
export function baselineDigest(entries: readonly BaselineEntry[]): string {
  const sorted = sortByPath(entries);
  return sha256Hex(
    canonicalJson(
      sorted.map(({ path, mode, size, sha256, blobId }) => ({ path, mode, size, sha256, blobId })),
    ),
  );
}

/** The baseline inventory a manifest implies: unchanged files as they are, changed ones as before. */
export function baselineOf(files: readonly ManifestFile[]): BaselineEntry[] {
  return files.flatMap((f): BaselineEntry[] => {
    if (f.change === 'added') return [];
    const was: { mode: FileMode; size: number; sha256: string; blobId: string } = f.before ?? f;
    return [{ path: f.path, mode: was.mode, size: was.size, sha256: was.sha256, blobId: was.blobId }];
  });
}
