// What a BuildTest step may write on its operation row (store/build-test-operations.ts), parsed
// strictly: a worker's evidence never reaches a column it does not name.
import { z } from 'zod';
import { MAX_DOCUMENT_BYTES } from '../../formats/awscapt2/document-limits.ts';

const json = z.record(z.string(), z.unknown());

export const buildTestEvidenceSchema = z
  .object({
    commandPod: json.optional(),
    collectorPod: json.optional(),
    preparation: json.optional(),
    exitCode: z.number().int().optional(),
    commandLog: json.optional(),
    collectorReceipt: json.optional(),
    capture: z
      .strictObject({ sha256: z.string(), length: z.number().int().min(1).max(MAX_DOCUMENT_BYTES) })
      .optional(),
    error: json.optional(),
  })
  // Outcome details the row does not keep (a reason, a message) are kept in `error` by the worker.
  .strip();
export type BuildTestEvidence = z.infer<typeof buildTestEvidenceSchema>;
