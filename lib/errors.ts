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
