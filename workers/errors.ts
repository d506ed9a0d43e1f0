// Worker errors carry a stable `code` and set `name`, so a caller can classify one after it crossed
// a process boundary (a BullMQ failedReason, a log line) without matching on messages.

export class WorkerError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** BullMQ would silently misbehave on this ID (`:` splits keys; all-digit IDs clash with its own). */
export class InvalidAttemptIdError extends WorkerError {
  constructor(readonly attemptId: string) {
    super(
      'invalid-attempt-id',
      `Attempt ID ${JSON.stringify(attemptId)} cannot be a job ID: it must be non-empty, ` +
        'contain no ":" and not be all digits',
    );
  }
}

export class QueueClosedError extends WorkerError {
  constructor(what: string) {
    super('queue-closed', `${what} is closed`);
  }
}

/** Redis did not accept the jobs in time; the outbox rows stay unpublished for the relay. */
export class PublishTimeoutError extends WorkerError {
  constructor(readonly timeoutMs: number) {
    super('publish-timeout', `Redis did not accept the jobs within ${timeoutMs} ms`);
  }
}
