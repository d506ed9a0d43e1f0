// Worker errors follow the project's error convention (`lib/errors.ts`): a stable kebab-case `code`
// and `name` set, so a caller can classify one after it crossed a process boundary (a BullMQ
// failedReason, a log line) without matching on messages. Their messages name internals (queue,
// Redis), so none is shown to an HTTP caller.
import { SandlotError } from '../lib/errors.ts';

export class WorkerError extends SandlotError {
  readonly status: number = 500;
  readonly title: string = 'Worker error';

  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** BullMQ would silently misbehave on this ID (`:` splits keys; all-digit IDs clash with its own). */
export class InvalidAttemptIdError extends WorkerError {
  override readonly title = 'Invalid attempt ID';
  constructor(readonly attemptId: string) {
    super(
      'invalid-attempt-id',
      `Attempt ID ${JSON.stringify(attemptId)} cannot be a job ID: it must be non-empty, ` +
        'contain no ":" and not be all digits',
    );
  }
}

/** The process is shutting down; retrying against another process can succeed. */
export class QueueClosedError extends WorkerError {
  override readonly status = 503;
  override readonly title = 'Queue closed';
  constructor(what: string) {
    super('queue-closed', `${what} is closed`);
  }
}

/** Redis did not accept the jobs in time; the outbox rows stay unpublished for the relay. */
export class PublishTimeoutError extends WorkerError {
  override readonly status = 503;
  override readonly title = 'Queue unavailable';
  constructor(readonly timeoutMs: number) {
    super('publish-timeout', `Redis did not accept the jobs within ${timeoutMs} ms`);
  }
}
