// What Core answers for a BuildTest checkpoint: the immutable accepted command, parsed strictly
// before anything trusts it. The caller of a BuildTest route never supplies a command, image or
// argument list; Environment resolves its checkpoint reference here, and reserves only what Core
// accepted. An absent `version` is version 1 with its strict rules (at least one declared output,
// no workspace input); only an explicit version 2 permits an empty output list, and it must bind a
// seed (its digest and length), which is fetched separately and checked against them.
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import { MAX_DOCUMENT_BYTES, MAX_FILES, MAX_SEED_BYTES } from '../../formats/awscapt2/document-limits.ts';
import { sha256HexSchema } from '../../formats/awscapt2/document-manifest.ts';
import { pathProblem } from '../../formats/awscapt2/repository-path.ts';

export { MAX_SEED_BYTES, sha256HexSchema };

/** The checkpoint JSON Core answers is bounded (its checkpoint limit). */
export const MAX_CHECKPOINT_JSON_BYTES = 4 * 1024 * 1024;

const gitObjectId = z.string().regex(/^[0-9a-f]{40}$/, 'expected a 40-hex Git object ID');

/** Core's full reference to one checkpoint of one BuildTest step of a run. */
export const checkpointRefSchema = z.strictObject({
  tenantId: identifierSchema,
  projectId: identifierSchema,
  runId: identifierSchema,
  stepId: identifierSchema,
  checkpointId: identifierSchema,
});
export type BuildTestCheckpointRef = z.infer<typeof checkpointRefSchema>;

// eslint-disable-next-line no-control-regex -- control characters are what is refused
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
const argument = z.string().max(4096).regex(NO_CONTROL, 'must not contain control characters');
const absolutePath = z
  .string()
  .max(4096)
  .regex(/^\//, 'expected an absolute path')
  .regex(NO_CONTROL, 'must not contain control characters')
  .refine(
    (p) =>
      !p
        .split('/')
        .slice(1)
        .some((s) => s === '' || s === '.' || s === '..'),
    {
      error: 'expected a normalized absolute path',
    },
  );
const repositoryPath = z.string().superRefine((p, ctx) => {
  const problem = pathProblem(p);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `the path ${problem}` });
});

const seedSchema = z.strictObject({
  sha256: sha256HexSchema,
  length: z.number().int().min(1).max(MAX_SEED_BYTES),
});

/** Server-produced source metadata of a version 2 command: it locates, it grants nothing. */
export const workspaceInputSchema = z.strictObject({
  workspaceId: identifierSchema,
  workspaceIncarnationId: identifierSchema,
  baseSha: gitObjectId,
  branchName: z.string().min(1).max(255).regex(NO_CONTROL, 'must not contain control characters'),
  seed: seedSchema,
});

const optionsSchema = z.strictObject({
  /** Relative to the prepared repository; `.` is its root. */
  workingDirectory: z.union([z.literal('.'), repositoryPath]),
  environment: z
    .record(z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/, 'expected an upper-case variable name'), argument)
    .refine((e) => Object.keys(e).length <= 64, { error: 'at most 64 variables' }),
  timeoutSeconds: z.number().int().min(1).max(86_400),
  /** Declared outputs: the files the command must leave in the repository. */
  outputs: z
    .array(repositoryPath)
    .max(MAX_FILES)
    .refine((o) => new Set(o).size === o.length, { error: 'declared outputs repeat a path' }),
});

const commonFields = {
  checkpoint: checkpointRefSchema,
  operationId: identifierSchema,
  selectionHash: sha256HexSchema,
  command: z.strictObject({ executable: absolutePath, args: z.array(argument).max(256) }),
  options: optionsSchema,
};

const version1 = z.strictObject({ ...commonFields, version: z.literal(1) });
const version2 = z.strictObject({
  ...commonFields,
  version: z.literal(2),
  workspaceInput: workspaceInputSchema,
});

/** An absent version is version 1 (strict version 1 rules), never "whatever the fields suggest". */
const withVersion = (value: unknown): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !('version' in value)
    ? { ...value, version: 1 }
    : value;

/** The accepted command as Core answers it; `version` is always present once parsed. */
export const acceptedCommandSchema = z.preprocess(
  withVersion,
  z.discriminatedUnion('version', [version1, version2]).superRefine((command, ctx) => {
    if (command.version === 1 && command.options.outputs.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['options', 'outputs'],
        message: 'version 1 declares at least one output (only version 2 may declare none)',
      });
    }
  }),
);

/**
 * An accepted command without its checkpoint, with an explicit version: what the embedded admin
 * route takes (its path names the checkpoint). The full schema above still judges the result.
 */
export const acceptedCommandBodySchema = z.discriminatedUnion('version', [
  version1.omit({ checkpoint: true }),
  version2.omit({ checkpoint: true }),
]);

export type WorkspaceInput = z.infer<typeof workspaceInputSchema>;
export type AcceptedBuildTestCommand = z.output<typeof acceptedCommandSchema>;

/** The seed a version 2 command binds (null for version 1, which has none). */
export function seedOf(command: AcceptedBuildTestCommand): { sha256: string; length: number } | null {
  return command.version === 2 ? command.workspaceInput.seed : null;
}

/** SHA-256 of the command's canonical JSON: equal commands, equal hashes, whatever the key order. */
export function acceptedCommandHash(command: AcceptedBuildTestCommand): string {
  return sha256Hex(canonicalJson(command));
}

export function sameCheckpoint(a: BuildTestCheckpointRef, b: BuildTestCheckpointRef): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/**
 * An Events journal acknowledgment of an admitted version 2 capture, as the acknowledgment route
 * receives it: Environment asks Core to verify it before saving it.
 */
export const journalAcknowledgmentSchema = z.strictObject({
  checkpoint: checkpointRefSchema,
  operationId: identifierSchema,
  /** The acknowledged record's position in the Events journal. */
  journalPosition: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  /** SHA-256 of the canonical admitted record. */
  recordSha256: sha256HexSchema,
  /** Where Source Control retains the admitted document. */
  objectReference: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[\x21-\x7e]+$/, 'expected printable ASCII without spaces'),
  /** The exact capture it acknowledges. */
  capture: z.strictObject({
    sha256: sha256HexSchema,
    length: z.number().int().min(1).max(MAX_DOCUMENT_BYTES),
    requestFingerprint: sha256HexSchema,
    collectorPodUid: z.string().min(1).max(128).regex(NO_CONTROL),
    commandPodUid: z.string().min(1).max(128).regex(NO_CONTROL),
  }),
});
export type JournalAcknowledgment = z.infer<typeof journalAcknowledgmentSchema>;

/** An admitted acknowledgment without its checkpoint (the embedded admin route's path names it). */
export const journalAdmissionBodySchema = journalAcknowledgmentSchema.omit({ checkpoint: true });
