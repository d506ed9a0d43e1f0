// The one shape every sandbox-host error shares, so each error file states only what is its own: a
// code (fixed, or one of a closed list), the status and title that code answers with, and how its
// message begins. The message a class is handed names codes, versions, sequences, ids and field
// paths only, never key material, certificates, signatures, evidence or envelope documents; and
// `detail` stays SandlotError's default (nothing), so a caller sees code, status and title alone.
import { SandlotError } from '../../lib/errors.ts';

/** What a code answers with if it reaches the HTTP layer; fixed for each code. */
export interface HostProblem {
  readonly status: number;
  readonly title: string;
}

export abstract class SandboxHostError<C extends string = string> extends SandlotError {
  readonly status: number;
  readonly title: string;

  protected constructor(
    readonly code: C,
    problem: HostProblem,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.status = problem.status;
    this.title = problem.title;
  }
}

/**
 * The base of an error with one fixed code, built as `new X(message, options?)` and saying
 * `<subject>: <message>`: `class HostStoppedError extends fixedCodeError({...}) {}`.
 */
export function fixedCodeError<C extends string>(fixed: HostProblem & { code: C; subject: string }) {
  return class extends SandboxHostError<C> {
    constructor(message: string, options?: ErrorOptions) {
      super(fixed.code, fixed, `${fixed.subject}: ${message}`, options);
    }
  };
}
