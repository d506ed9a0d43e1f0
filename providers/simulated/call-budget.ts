// A call's budget: its caller's AbortSignal and deadline. Deadlines are wall-clock (Date.now), not
// the provider's injected clock, because the waiting they bound is done with real timers. Running out
// of budget is always uncertain: like a real client, we cannot know what the far side already did.
import type { CallOptions } from '../provider.ts';
import { uncertain, type ProviderError } from '../errors.ts';

export function cancelled(what: string, signal: AbortSignal): ProviderError {
  return uncertain('cancelled', `Simulated ${what} was cancelled by its caller`, signal.reason);
}

export function timedOut(what: string, deadline: Date): ProviderError {
  return uncertain('timeout', `Simulated ${what} passed its deadline ${deadline.toISOString()}`);
}

/** Throws if the caller already gave up or the deadline has passed. */
export function checkBudget(options: CallOptions, what: string): void {
  if (options.signal.aborted) throw cancelled(what, options.signal);
  if (Date.now() >= options.deadline.getTime()) throw timedOut(what, options.deadline);
}

/**
 * Waits `ms` (Infinity: until the deadline). Rejects with `cancelled` as soon as the signal aborts,
 * and with `timeout` at the deadline when the wait would outlast it.
 */
export function sleepWithin(ms: number, options: CallOptions, what: string): Promise<void> {
  const { signal, deadline } = options;
  if (signal.aborted) return Promise.reject(cancelled(what, signal));
  const remaining = deadline.getTime() - Date.now();
  const outlasts = ms > remaining;
  const wait = Math.max(0, outlasts ? remaining : ms);
  if (wait === 0 && !outlasts) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(what, signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      if (outlasts) reject(timedOut(what, deadline));
      else resolve();
    }, wait);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
