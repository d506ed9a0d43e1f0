// The bounds of a version 2 output document (AWSCAPT2), in one place: the complete-tree limits the
// collector admits, and the section limits derived from them so that any admitted tree fits in a
// document. docs/build-test.md lists them; change both together.

const MiB = 1024 * 1024;

/** Files in the complete prepared repository (the root `.git` directory excluded). */
export const MAX_FILES = 10_000;
/** Total file content of the complete repository, in bytes. */
export const MAX_TOTAL_FILE_BYTES = 64 * MiB;
/**
 * The package file limit for version 2 output obligations: the declared outputs' content, summed,
 * may not exceed it (version 1's package of outputs had the same bound).
 */
export const MAX_OUTPUT_BYTES = 16 * MiB;
/** A version 2 seed (a credential-free Git bundle) is bounded. */
export const MAX_SEED_BYTES = 67_188_876;
/** A repository-relative path, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 1024;

/** The fixed header: magic, manifest length, patch length, package length. */
export const HEADER_BYTES = 24;
export const MAGIC = 'AWSCAPT2';

/**
 * Canonical JSON manifest. Each file costs at most twice its path (a path of `"` or `\` escapes to
 * two bytes each) plus about 500 bytes of digests and fields; 10,000 files of 1,024-byte paths fit.
 */
export const MAX_MANIFEST_BYTES = 32 * MiB;
/**
 * Git patch. The outputs' content costs about 1.29 times itself (deflate, base85, line prefixes),
 * and each changed file a header of at most four times its path plus about 250 bytes.
 */
export const MAX_PATCH_BYTES = 64 * MiB;
/** Per package entry: path length (2), mode (2), size (4), SHA-256 (32). */
export const PACKAGE_ENTRY_HEADER_BYTES = 40;
/** The file count (4), every entry's header and longest path, and the content limit. */
export const MAX_PACKAGE_BYTES =
  4 + MAX_FILES * (PACKAGE_ENTRY_HEADER_BYTES + MAX_PATH_BYTES) + MAX_TOTAL_FILE_BYTES;
/** What a whole document may weigh: what Core reads back from Environment's capture route. */
export const MAX_DOCUMENT_BYTES = HEADER_BYTES + MAX_MANIFEST_BYTES + MAX_PATCH_BYTES + MAX_PACKAGE_BYTES;
