// Runs calls for the same key one after another inside this process, so concurrent events for one
// Environment queue here instead of each holding a pooled connection while waiting on the advisory
// lock. Correctness never depends on it: other processes still serialise on the database lock.
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return next;
  }

  get size(): number {
    return this.#tails.size;
  }
}
