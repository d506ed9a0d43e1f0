// What the watch cache of an API server keeps: every change the store made, in resourceVersion
// order, the most recent `capacity` of them, and the listeners that follow new ones. Invariant:
// ObjectStore.set is the only writer of stored objects and it publishes each change here, so a
// watcher misses nothing (controller passes, status writes, finalizer-held deletions, FakeStore
// put/remove/mutate alike). Listeners are called synchronously inside the write.
import type { ResourceType } from './resources.ts';
import type { KubeObject } from './types.ts';

export interface StoreChange {
  /** The resourceVersion this change was given (for a removal, a version of its own). */
  revision: number;
  resource: ResourceType;
  /** What the key held before; absent for a creation. The stored object itself: read only. */
  previous: Readonly<KubeObject> | undefined;
  /** What the key holds now; absent for a removal. The stored object itself: read only. */
  current: Readonly<KubeObject> | undefined;
}

export type ChangeListener = (change: StoreChange) => void;

export const DEFAULT_HISTORY_SIZE = 10_000;

export class ChangeFeed {
  private readonly history: StoreChange[] = [];
  private readonly listeners = new Set<ChangeListener>();
  /** Every change after this version is in `history`; a watch from an older version is too old. */
  private kept: number;

  constructor(
    startRevision: number,
    private readonly capacity: number = DEFAULT_HISTORY_SIZE,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error('the watch history holds at least 1 event');
    this.kept = startRevision;
  }

  /** The oldest version a watch can start from: real servers name it in "too old resource version". */
  get oldestWatchable(): number {
    return this.kept;
  }

  publish(change: StoreChange): void {
    this.history.push(change);
    if (this.history.length > this.capacity) {
      const dropped = this.history.shift();
      if (dropped) this.kept = dropped.revision;
    }
    for (const listener of this.listeners) listener(change);
  }

  /** The kept changes made after `revision`, oldest first, or undefined when some are gone. */
  since(revision: number): StoreChange[] | undefined {
    if (revision < this.kept) return undefined;
    const first = this.history.findIndex((c) => c.revision > revision);
    return first === -1 ? [] : this.history.slice(first);
  }

  /** Follows every later change until the returned function is called. */
  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
