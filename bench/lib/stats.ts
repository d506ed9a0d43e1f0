// Latency samples and their summaries for the lifecycle benchmark: named series of milliseconds,
// summarised as count, mean and the p50 / p95 / p99 percentiles (nearest rank).

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    n: sorted.length,
    mean: sorted.length === 0 ? Number.NaN : total / sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** Milliseconds per named series (a route, or a span such as provision→Active). */
export class Samples {
  readonly #series = new Map<string, number[]>();

  add(name: string, ms: number): void {
    const list = this.#series.get(name);
    if (list === undefined) this.#series.set(name, [ms]);
    else list.push(ms);
  }

  summaries(): Record<string, Summary> {
    return Object.fromEntries([...this.#series].map(([name, list]) => [name, summarize(list)]));
  }
}

/** Round to `digits` decimals, keeping JSON small and tables readable. */
export const round = (value: number, digits = 1): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
