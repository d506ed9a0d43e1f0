// How long reconciliation and observation wait before asking a provider about a lease again, after
// asking failed. A call that timed out or failed proves nothing, so it is asked again, but later
// each time: base · 2^(n−1) after the n-th failure in a row, never more than max, jittered per
// attempt into [½, 1) of that so leases that failed together do not retry together. When a provider
// fails for most of the leases waiting on it, each of its leases waits `providerFactor` times as
// long (still at most max), so a provider that keeps timing out is asked less, not more.

export interface Backoff {
  /** The wait after the first failure, in ms. */
  baseMs: number;
  /** No wait is longer than this, in ms. */
  maxMs: number;
  /** The multiplier for a provider failing for most of its waiting leases. */
  providerFactor: number;
  /** Fewer waiting leases than this never count as a failing provider. */
  providerQuorum: number;
}

export const defaultBackoff: Backoff = { baseMs: 1_000, maxMs: 30_000, providerFactor: 4, providerQuorum: 4 };

/** The backoff with its longest wait set (SANDLOT_RECONCILE_BACKOFF_MAX_MS); base never above it. */
export function backoffWithMax(maxMs: number): Backoff {
  return { ...defaultBackoff, maxMs, baseMs: Math.min(defaultBackoff.baseMs, maxMs) };
}
