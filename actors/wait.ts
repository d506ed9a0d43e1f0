// Long-poll reads (`?wait=`): a read that waits until the Environment's revision passes the one the
// caller saw, or until its deadline, instead of the caller polling. Every lease change is a
// transition, so a new revision covers the lease as well. Wake-ups come from three places: this
// process's own commits (the runtime's commit listeners); other processes' commits announced over
// Redis (workers/change-feed.ts, where Redis is configured); and, as the fallback that needs
// neither, one read per tick (`watchEveryMs`) of the revisions of every Environment waited on here,
// taken only while someone waits. Not NOTIFY: a NOTIFY in the commit transaction takes PostgreSQL's
// database-wide notify lock at every commit (measured: half the transitions/s at 32 clients), and
// one sent after commit costs a transaction ID per batch; a shared read costs neither.
// A wake-up only prompts a re-read: the answer is always what the database says.
import { problemClass } from '../lib/errors.ts';
import type { Database, Queryable } from '../store/db.ts';
import { readRevisions, type EnvironmentRow } from '../store/environments.ts';
import { mark, timelineEnabled } from '../lib/timeline.ts';
import { ActorError } from './errors.ts';
import type { Guard } from './guard.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type { CommitListener } from './runtime.ts';

/** The longest `wait` a caller may ask for. */
export const maxWaitMs = 30_000;
/** Waiting requests per process (default); one more gets 503. */
export const defaultMaxWaiters = 1_000;

export interface WaitOptions {
  /** How long to wait at most (≤ maxWaitMs). */
  waitMs: number;
  /** The revision the caller saw (default: the one read when the wait starts). */
  after?: number;
}

export class TooManyWaitersError extends problemClass(
  { code: 'too-many-waiters', status: 503, title: 'Too many waiting requests' },
  ActorError,
) {
  constructor(limit: number) {
    super(`this process already holds ${limit} waiting requests; read without wait`);
  }
}

interface Waiter {
  /** The highest revision announced for the Environment since the waiter was registered. */
  seen: number;
  wake: (() => void) | null;
}

export interface EnvironmentChangesDeps {
  db: Database;
  runtime: { onCommitted(listener: CommitListener): () => void };
  maxWaiters?: number;
  /** How often other processes' commits are looked for while someone waits (default 100 ms). */
  watchEveryMs?: number;
}

export class EnvironmentChanges {
  readonly #deps: EnvironmentChangesDeps;
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #limit: number;
  #count = 0;
  #watch: NodeJS.Timeout | null = null;
  #reading = false;

  constructor(deps: EnvironmentChangesDeps) {
    this.#deps = deps;
    this.#limit = deps.maxWaiters ?? defaultMaxWaiters;
    deps.runtime.onCommitted((notice) => {
      if (notice.outcome === 'committed') this.#changed(notice.environmentId, notice.revision, 'own commit');
    });
  }

  /**
   * A commit another process announced (workers/change-feed.ts): wakes whoever waits on the
   * Environment to re-read it. Never trusted beyond that.
   */
  announce(environmentId: string, revision: number): void {
    this.#changed(environmentId, revision, 'change feed');
  }

  /** Waiting requests now. */
  get waiting(): number {
    return this.#count;
  }

  /**
   * `read`, and while its revision is not past `after` (default: the first read's) and the deadline
   * has not come, wait for an announcement and read again. Returns the last read.
   */
  async readAfterChange<R>(
    environmentId: string,
    options: WaitOptions,
    read: () => Promise<R>,
    revisionOf: (value: R) => number,
  ): Promise<R> {
    if (this.#count >= this.#limit) throw new TooManyWaitersError(this.#limit);
    const deadline = Date.now() + Math.min(options.waitMs, maxWaitMs);
    // Registered before the first read, so a commit between that read and the wait is not missed.
    const waiter: Waiter = { seen: 0, wake: null };
    this.#add(environmentId, waiter);
    try {
      let value = await read();
      const after = options.after ?? revisionOf(value);
      while (revisionOf(value) <= after) {
        if (waiter.seen <= after && !(await this.#sleep(waiter, after, deadline))) break;
        value = await read();
        // An announcement the database does not bear out yet: trust the database, wait again.
        waiter.seen = Math.max(revisionOf(value), Math.min(waiter.seen, after));
        if (Date.now() >= deadline) break;
      }
      return value;
    } finally {
      this.#remove(environmentId, waiter);
    }
  }

  /** Resolves true when woken by a revision past `after`, false at the deadline. */
  #sleep(waiter: Waiter, after: number, deadline: number): Promise<boolean> {
    const left = deadline - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        waiter.wake = null;
        resolve(false);
      }, left);
      waiter.wake = () => {
        if (waiter.seen <= after) return;
        clearTimeout(timer);
        waiter.wake = null;
        resolve(true);
      };
    });
  }

  #add(environmentId: string, waiter: Waiter): void {
    let set = this.#waiters.get(environmentId);
    if (set === undefined) this.#waiters.set(environmentId, (set = new Set()));
    set.add(waiter);
    this.#count++;
    this.#watchOthers();
  }

  #remove(environmentId: string, waiter: Waiter): void {
    const set = this.#waiters.get(environmentId);
    if (set?.delete(waiter) === true) this.#count--;
    if (set?.size === 0) this.#waiters.delete(environmentId);
  }

  #changed(environmentId: string, revision: number, how: string): void {
    const set = this.#waiters.get(environmentId);
    if (set === undefined) return;
    if (timelineEnabled() && [...set].some((w) => w.seen < revision))
      mark(environmentId, `waiter told of r${revision} (${how})`);
    for (const waiter of set) {
      waiter.seen = Math.max(waiter.seen, revision);
      waiter.wake?.();
    }
  }

  /** Starts the shared revision read while anyone waits; it stops itself when no one does. */
  #watchOthers(): void {
    if (this.#watch !== null) return;
    this.#watch = setInterval(() => void this.#readOthers(), this.#deps.watchEveryMs ?? 100);
    this.#watch.unref();
  }

  async #readOthers(): Promise<void> {
    if (this.#waiters.size === 0) {
      if (this.#watch !== null) clearInterval(this.#watch);
      this.#watch = null;
      return;
    }
    if (this.#reading) return;
    this.#reading = true;
    try {
      for (const { environmentId, revision } of await readRevisions(this.#deps.db, [
        ...this.#waiters.keys(),
      ])) {
        this.#changed(environmentId, revision, 'revision read');
      }
    } catch {
      // A failed read wakes no one; waits still end at their deadline, and the next tick reads again.
    } finally {
      this.#reading = false;
    }
  }
}

/**
 * A long-poll read of the caller's Environment between two fresh authority checks: before the
 * first read, and after the last one (a caller who lost access during the wait gets 403).
 */
export function readOwnedAfterChange(
  changes: EnvironmentChanges,
  db: Queryable,
  guard: Guard,
  address: EnvironmentAddress,
  wait: WaitOptions,
): Promise<EnvironmentRow> {
  return guard.around(() =>
    changes.readAfterChange(
      address.environmentId,
      wait,
      () => readOwnedEnvironment(db, guard.caller, address),
      (row) => row.revision,
    ),
  );
}
