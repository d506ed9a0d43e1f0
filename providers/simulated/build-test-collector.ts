// The simulated collector Pod's work: read the prepared repository the command left (version 2:
// the whole tree; version 1: the declared outputs alone), take each declared output's evidence from
// the bytes as read, and for version 2 build the output document from the baseline inventory of the
// accepted base commit. Whatever cannot be captured faithfully ends the collector `failed`; an
// interrupted read (signal, deadline) is thrown, so the collection is simply done again.
import { constructDocument } from '../../formats/awscapt2/construct-document.ts';
import { OutputDocumentError } from '../../formats/awscapt2/document-errors.ts';
import { sha256Of } from '../../formats/awscapt2/file-package.ts';
import type {
  BuildTestBinding,
  CollectorFailure,
  CollectorReceipt,
  OutputEvidence,
  PreparationReceipt,
} from '../build-test.ts';
import { CaptureRefused, collectTree, readOutputs } from './build-test-capture.ts';
import { baselineInventory, GitRefused, type GitContext } from './build-test-repository.ts';
import type { CollectorRun } from './build-test-rows.ts';

export type Collection =
  | {
      sealed: true;
      /** The sealed version 2 document; null for version 1. */
      document: { bytes: Buffer; sha256: string; length: number } | null;
      receipt: CollectorReceipt;
    }
  | { sealed: false; reason: CollectorFailure; message: string };

export interface CollectionInput {
  run: CollectorRun;
  binding: BuildTestBinding;
  /** The collector Pod's UID, which its receipt names. */
  podUid: string;
  repo: string;
  /** The command Pod's preparation receipt, as stored. */
  preparation: PreparationReceipt | null;
  git: GitContext;
}

const failed = (reason: CollectorFailure, message: string): Collection => ({
  sealed: false,
  reason,
  message,
});

export async function collect(input: CollectionInput): Promise<Collection> {
  try {
    return input.run.version === 2 ? await collectVersion2(input) : await collectVersion1(input);
  } catch (error) {
    if (error instanceof CaptureRefused || error instanceof GitRefused) {
      return failed('capture-refused', error.message);
    }
    throw error;
  }
}

function receiptOf(input: CollectionInput, outputs: OutputEvidence[], capture: CollectorReceipt['capture']) {
  const { binding } = input;
  return {
    podUid: input.podUid,
    container: 'collector',
    operationId: binding.operationId,
    checkpointId: binding.checkpoint.checkpointId,
    requestFingerprint: binding.requestFingerprint,
    version: input.run.version,
    outputs,
    capture,
  } satisfies CollectorReceipt;
}

async function collectVersion1(input: CollectionInput): Promise<Collection> {
  const read = await readOutputs(input.repo, input.run.outputs);
  const outputs: OutputEvidence[] = [];
  for (const path of input.run.outputs) {
    const content = read.get(path) ?? null;
    if (content === null) return failed('missing-output', `the declared output ${path} is missing`);
    outputs.push({ path, size: content.length, sha256: sha256Of(content) });
  }
  return { sealed: true, document: null, receipt: receiptOf(input, outputs, null) };
}

async function collectVersion2(input: CollectionInput): Promise<Collection> {
  const { run, binding, preparation } = input;
  const source = run.source;
  if (source === null) return failed('invalid-receipt', 'a version 2 collector has no accepted source');
  // The collector reads only the repository its command Pod's preparation receipt names.
  if (
    preparation === null ||
    preparation.path !== input.repo ||
    preparation.operationId !== binding.operationId ||
    preparation.checkpointId !== binding.checkpoint.checkpointId ||
    preparation.sourceSha256 !== source.seedSha256 ||
    preparation.podUid !== run.commandPodUid
  ) {
    return failed('invalid-receipt', 'the preparation receipt does not name this operation and repository');
  }
  const collected = await collectTree(input.repo, input.git.options.signal);
  const byPath = new Map(collected.map((file) => [file.path, file]));
  const outputs: OutputEvidence[] = [];
  for (const path of run.outputs) {
    const file = byPath.get(path);
    if (file === undefined) return failed('missing-output', `the declared output ${path} is missing`);
    outputs.push({ path, size: file.content.length, sha256: sha256Of(file.content) });
  }
  const baseline = await baselineInventory(input.repo, source.baseSha, input.git);
  try {
    const document = constructDocument({
      binding: {
        operationId: binding.operationId,
        checkpointId: binding.checkpoint.checkpointId,
        requestFingerprint: binding.requestFingerprint,
      },
      source,
      baseline,
      collected,
      outputs: outputs.map(({ path, size, sha256 }) => ({ path, evidence: { size, sha256 } })),
    });
    return {
      sealed: true,
      document: { bytes: document.bytes, ...document.reference },
      receipt: receiptOf(input, outputs, document.reference),
    };
  } catch (error) {
    if (error instanceof OutputDocumentError) {
      const at = error.path === undefined ? '' : ` (${error.path})`;
      return failed('capture-refused', `${error.message}${at}`);
    }
    throw error;
  }
}
