// Publishes outbox rows to the effect queue until a worker acknowledges them. This is what makes a
// lost queue message, a flushed Redis or a crash between commit and publish lose no work: a row is
// re-published every `republishAfterMs` until its attempt has left Pending.
import type { Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';
import { mark } from '../lib/timeline.ts';
import type { Database, Queryable } from '../store/db.ts';
import type { OutboxRow } from '../store/outbox.ts';
import {
  acknowledgeAttemptOutbox,
  claimDueOutbox,
  markOutboxPublished,
} from '../store/outbox-relay-queries.ts';
import { isValidAttemptId, type EffectQueue } from './effect-queue.ts';

export interface OutboxRelayOptions {
  db: Database;
  queue: EffectQueue;
  /** A published row not acknowledged after this long is published again (default 5 s). */
  republishAfterMs?: number;
  /** Rows claimed per tick (default 500); a full batch is followed at once by another tick. */
  batchSize?: number;
  pollIntervalMs?: number;
  logger?: Logger;
}

export class OutboxRelay {
  private readonly db: Database;
  private readonly queue: EffectQueue;
  private readonly republishAfterMs: number;
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;

  constructor(options: OutboxRelayOptions) {
    this.db = options.db;
    this.queue = options.queue;
    this.republishAfterMs = options.republishAfterMs ?? 5_000;
    this.batchSize = options.batchSize ?? 500;
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.logger = options.logger ?? createLogger({ name: 'outbox-relay' });
  }

  /**
   * Publishes one batch of due rows and returns how many rows it marked published. Redis is
   * written inside the claiming transaction: if the publish fails the rows stay unpublished, and if
   * the commit fails after a publish the rows are simply published again (jobs are idempotent).
   */
  tick(): Promise<number> {
    return this.db.transaction(async (tx) => {
      const due = await claimDueOutbox(tx, {
        republishAfterMs: this.republishAfterMs,
        limit: this.batchSize,
      });
      if (due.length === 0) return 0;
      const invalid = due.filter((row) => !isValidAttemptId(row.attemptId));
      if (invalid.length > 0) {
        // Marked published like the rest, so a bad row is reported every `republishAfterMs`
        // instead of failing every tick and holding up the rows behind it.
        this.logger.error(
          { outboxIds: invalid.map((row) => row.outboxId) },
          'outbox rows with invalid attempt IDs',
        );
      }
      const valid = due.filter((row) => isValidAttemptId(row.attemptId));
      await this.queue.publish(
        valid.map((row) => ({
          attemptId: row.attemptId,
          ...(row.traceContext === null ? {} : { traceContext: row.traceContext }),
        })),
      );
      await markOutboxPublished(
        tx,
        due.map((row) => row.outboxId),
      );
      return due.length;
    });
  }

  /** Ticks now and every `pollIntervalMs`; a tick never overlaps the previous one. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.poll(), this.pollIntervalMs);
    this.timer.unref();
    this.poll();
  }

  /** Stops polling and waits for the tick in flight, if any. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.inflight;
  }

  private poll(): void {
    if (this.inflight !== undefined) return;
    this.inflight = this.drain().finally(() => {
      this.inflight = undefined;
    });
  }

  private async drain(): Promise<void> {
    try {
      // A full batch means a backlog (after an outage or a flush): keep going rather than wait.
      let published: number;
      do published = await this.tick();
      while (published === this.batchSize && this.timer !== undefined);
    } catch (error) {
      this.logger.warn({ err: error }, 'outbox relay tick failed; rows stay due');
    }
  }

  /**
   * Hands freshly committed rows to the queue at once, for latency. Best effort: on failure the
   * rows are still due and the next tick publishes them. It does not mark them published, which
   * would cost a commit; the relay rarely sees them anyway, since a worker acknowledges an attempt
   * as soon as it leaves Pending, well within one poll interval.
   */
  async publishNow(rows: readonly OutboxRow[]): Promise<void> {
    const jobs = rows.flatMap((row) =>
      row.attemptId === null
        ? []
        : [
            {
              attemptId: row.attemptId,
              environmentId: row.environmentId,
              ...(row.traceContext === null ? {} : { traceContext: row.traceContext }),
            },
          ],
    );
    if (jobs.length === 0) return;
    try {
      await this.queue.publish(jobs);
      for (const row of rows)
        if (row.attemptId !== null) mark(row.environmentId, 'effect handed to the queue');
    } catch (error) {
      this.logger.warn(
        { err: error, attempts: jobs.length },
        'immediate publish failed; the relay will retry',
      );
    }
  }
}

/** Marks every outbox row of the attempt handled; call in the transaction that moves it off Pending. */
export function acknowledgeAttempt(tx: Queryable, attemptId: string): Promise<number> {
  return acknowledgeAttemptOutbox(tx, attemptId);
}
