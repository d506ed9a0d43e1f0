// Why an output document, or the inventories it is built from, was refused: one error class with a
// stable reason. The message may name a repository path (never file content); callers see only the
// reason unless they choose to show more.
import { problemClass } from '../../lib/errors.ts';

export const documentFailures = [
  // Framing and sections
  'invalid-header',
  'invalid-length',
  'truncated',
  'trailing-bytes',
  'malformed-manifest',
  'malformed-package',
  'malformed-patch',
  'section-digest-mismatch',
  'file-digest-mismatch',
  'package-manifest-mismatch',
  'inconsistent-manifest',
  'limit-exceeded',
  // Inventories (construct)
  'invalid-path',
  'duplicate-path',
  'invalid-inventory',
  'missing-baseline-file',
  'changed-undeclared-file',
  'undeclared-additional-file',
  'missing-output',
  'output-evidence-mismatch',
] as const;
export type DocumentFailure = (typeof documentFailures)[number];

export class OutputDocumentError extends problemClass({
  code: 'output-document-invalid',
  status: 422,
  title: 'Output document invalid',
}) {
  constructor(
    readonly reason: DocumentFailure,
    message: string,
    /** The repository path concerned, when there is one. */
    readonly path?: string,
  ) {
    super(`${reason}: ${message}`);
  }

  override get detail(): string {
    return `the output document was refused (${this.reason})`;
  }

  override get extensions(): Readonly<Record<string, unknown>> {
    return { reason: this.reason };
  }
}

export function refuse(reason: DocumentFailure, message: string, path?: string): never {
  throw new OutputDocumentError(reason, message, path);
}
