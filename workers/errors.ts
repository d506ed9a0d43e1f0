// Worker errors follow the project's error convention (`lib/errors.ts`): a stable kebab-case `code`
// and `name` set, so a caller can classify one after it crossed a process boundary (a BullMQ
// failedReason, a log line) without matching on messages. Their messages name internals (queue,
// Redis), so none is shown to an HTTP caller.
import { problemClass } from '../lib/errors.ts';

/** The family; an instance of it alone (a code but no declaration of its own) answers 500. */
export class WorkerError extends problemClass({ status: 500, title: 'Worker error' }) {}

/** BullMQ would silently misbehave on this ID (`:` splits keys; all-digit IDs clash with its own). */
export class InvalidAttemptIdError extends problemClass(
  { code: 'invalid-attempt-id', status: 500, title: 'Invalid attempt ID' },
  WorkerError,
) {
  constructor(readonly attemptId: string) {
    super(
      `Attempt ID ${JSON.stringify(attemptId)} cannot be a job ID: it must be non-empty, ` +
        'contain no ":" and not be all digits',
    );
  }
}

/** The process is shutting down; retrying against another process can succeed. */
export class QueueClosedError extends problemClass(
  { code: 'queue-closed', status: 503, title: 'Queue closed' },
  WorkerError,
) {
  constructor(what: string) {
    super(`${what} is closed`);
  }
}

/** Redis did not accept the jobs in time; the outbox rows stay unpublished for the relay. */
export class PublishTimeoutError extends problemClass(
  { code: 'publish-timeout', status: 503, title: 'Queue unavailable' },
  WorkerError,
) {
  constructor(readonly timeoutMs: number) {
    super(`Redis did not accept the jobs within ${timeoutMs} ms`);
  }
}
