// Every random choice of a chaos run comes from its one seed: the fault schedule, each Environment's
// path, the simulated provider's seed in each process incarnation. A label names the use, so adding a
// use never shifts the draws of another, and `--seed S` repeats the same choices.
import { createHash } from 'node:crypto';
import { mulberry32 } from '../providers/simulated/fault-injector.ts';

/** A 32-bit seed for `labels` under the run's seed (SHA-256, so neighbouring labels are unrelated). */
export function deriveSeed(seed: number, ...labels: (string | number)[]): number {
  return createHash('sha256')
    .update([seed, ...labels].join('/'))
    .digest()
    .readUInt32BE(0);
}

export class Rng {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }

  /** In [0, 1). */
  float(): number {
    return this.#next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.#next() * (max - min + 1));
  }

  /** A number in [min, max). */
  between(min: number, max: number): number {
    return min + this.#next() * (max - min);
  }

  chance(p: number): boolean {
    return this.#next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[Math.floor(this.#next() * items.length)] as T;
  }
}
