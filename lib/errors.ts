// The one error convention. Every error Sandlot throws on purpose says, as data, what it is: a
// stable kebab-case `code` that is also its problem type (`urn:sandlot:problem:<code>` over HTTP),
// the HTTP `status` it answers with, and a fixed `title`. What a caller may read is opt-in: `detail`
// and `extensions` are empty unless a class returns caller-safe values, so a message that might
// carry internals stays in the logs. `name` is set from the class because errors cross process
// boundaries (a job's failedReason, a log line), where `instanceof` no longer works.
// This file imports nothing from the project, so every layer may use it.

/** What a `code` must look like: lowercase words joined by single hyphens (`stale-fence`). */
export const ERROR_CODE_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export abstract class SandlotError extends Error {
  /** Stable kebab-case identifier, and the problem type. Never reworded once published. */
  abstract readonly code: string;
  /** The HTTP status this error answers with if it reaches the HTTP layer. */
  abstract readonly status: number;
  /** Fixed for each code; never carries values. */
  abstract readonly title: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }

  /** Text a caller may see. Override only where the message is written for callers. */
  get detail(): string | undefined {
    return undefined;
  }

  /** For an unavailability (503): how long a client should wait before retrying (Retry-After). */
  get retryAfterSeconds(): number | undefined {
    return undefined;
  }

  /** Extra problem members a caller may see (`unresolvedAttempts`, `current`, ...). */
  get extensions(): Readonly<Record<string, unknown>> | undefined {
    return undefined;
  }
}

/** The problem type of a code, as the HTTP layer writes it (`urn:sandlot:problem:<code>`). */
export const PROBLEM_TYPE_PREFIX = 'urn:sandlot:problem:';
export const problemTypeOf = (code: string): string => `${PROBLEM_TYPE_PREFIX}${code}`;

/**
 * What an error class is, as data: the one way to declare one (`problemClass`). Fields left out are
 * inherited from the base class (a `SandlotError` has no detail and no Retry-After).
 */
export interface ProblemDeclaration {
  /**
   * The code, and so the problem type. Left out only by a family whose instances differ in code
   * (`LeaseConflictError`): each instance passes its own (`ProblemOptions.code`).
   */
  readonly code?: string;
  readonly status: number;
  /** Fixed for the class; never carries values. */
  readonly title: string;
  /**
   * The message is written for callers, so it is the problem's `detail`. `false`: no detail
   * (a message that might carry internals stays in the logs). A class whose caller-visible text is
   * fixed overrides `detail` instead.
   */
  readonly callerSafe?: boolean;
  /** For an unavailability (503): the Retry-After every instance answers with. */
  readonly retryAfterSeconds?: number;
}

/** Per instance: the cause, and for a family the code (or status, title) this instance answers with. */
export interface ProblemOptions extends ErrorOptions {
  readonly code?: string;
  readonly status?: number;
  readonly title?: string;
}

/** What a declared class implements: the abstract members of `SandlotError`, from its declaration. */
export interface DeclaredProblem {
  readonly code: string;
  readonly status: number;
  readonly title: string;
}

/** A class `problemClass` can extend, and what it returns: constructed from a message and options. */
export type ProblemClass<T extends SandlotError = SandlotError> = abstract new (
  message: string,
  options?: ProblemOptions,
) => T & DeclaredProblem;

/**
 * Declares an error class from its declaration, as the base of the class that adds its fields and
 * writes its message:
 *
 *     export class EnvironmentNotFoundError extends problemClass(
 *       { code: 'environment-not-found', status: 404, title: 'Environment not found', callerSafe: true },
 *     ) {
 *       constructor(readonly environmentId: string) {
 *         super(`Environment ${environmentId} does not exist`);
 *       }
 *     }
 *
 * `base` (default `SandlotError`) puts the class in a family (`ActorError`), so `instanceof` of the
 * family holds and what the declaration leaves out comes from it. `name` is the concrete class's.
 */
export function problemClass(declaration: ProblemDeclaration): ProblemClass;
export function problemClass<T extends SandlotError>(
  declaration: ProblemDeclaration,
  base: ProblemClass<T>,
): ProblemClass<T>;
export function problemClass(
  declaration: ProblemDeclaration,
  base: ProblemClass = SandlotError,
): ProblemClass {
  abstract class Declared extends base {
    override readonly code: string;
    override readonly status: number;
    override readonly title: string;

    constructor(message: string, options?: ProblemOptions) {
      const code = options?.code ?? declaration.code;
      const status = options?.status ?? declaration.status;
      const title = options?.title ?? declaration.title;
      // A family's base is a declared class too: it is handed what this class declares.
      super(
        message,
        code === undefined ? { ...options, status, title } : { ...options, code, status, title },
      );
      if (code === undefined) throw new TypeError(`${new.target.name} declares no code`);
      this.code = code;
      this.status = status;
      this.title = title;
    }

    override get detail(): string | undefined {
      if (declaration.callerSafe === undefined) return super.detail;
      return declaration.callerSafe ? this.message : undefined;
    }

    override get retryAfterSeconds(): number | undefined {
      return declaration.retryAfterSeconds ?? super.retryAfterSeconds;
    }
  }
  return Declared;
}
