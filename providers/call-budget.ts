// A provider call's budget: the caller's AbortSignal and deadline, which bound every request the
// adapter makes and every wait between requests. Deadlines are wall-clock (Date.now), never a
// provider's injected clock, because the waits they bound use real timers. Running out of budget is
// always uncertain: like any client, we cannot know what the far side already did.
//
// One rule decides whether time is left, everywhere in this file: at instant `t` a call has time
// left only while `t < deadline`. A deadline equal to now has no time left, so a call checked at
// its deadline times out, and a wait that would end exactly at the deadline outlasts it (the check
// after it would fail anyway; better to fail without waiting for nothing).
import { uncertain, type ProviderError } from './errors.ts';
import type { CallOptions } from './provider.ts';

/** Whether a call bounded by `deadline` still has time left at `at` (ms since the epoch). */
export function hasTimeLeft(deadline: Date, at: number = Date.now()): boolean {
  return at < deadline.getTime();
}

/** The caller's signal, also aborted at the deadline: what every outgoing request carries. */
export function requestSignal(options: CallOptions): AbortSignal {
  const remaining = Math.max(0, options.deadline.getTime() - Date.now());
  return AbortSignal.any([options.signal, AbortSignal.timeout(remaining)]);
}

/** The same call, with its deadline brought forward to `limitMs` from now when that is sooner. */
export function narrowed(options: CallOptions, limitMs: number): CallOptions {
  const limit = Date.now() + limitMs;
  return limit < options.deadline.getTime() ? { signal: options.signal, deadline: new Date(limit) } : options;
}

/** The budget checks of one provider; its `label` opens every error message ("Simulated provision …"). */
export interface CallBudget {
  cancelled(what: string, signal: AbortSignal): ProviderError;
  timedOut(what: string, deadline: Date): ProviderError;
  /** Throws if the caller already gave up or no time is left. */
  check(options: CallOptions, what: string): void;
  /**
   * Waits `ms` (Infinity: until the deadline). Rejects with `cancelled` as soon as the signal aborts,
   * and with `timeout` at the deadline when the wait would reach it.
   */
  sleep(ms: number, options: CallOptions, what: string): Promise<void>;
}

export function callBudget(label: string): CallBudget {
  const cancelled = (what: string, signal: AbortSignal): ProviderError =>
    uncertain('cancelled', `${label} ${what} was cancelled by its caller`, signal.reason);
  const timedOut = (what: string, deadline: Date): ProviderError =>
    uncertain('timeout', `${label} ${what} passed its deadline ${deadline.toISOString()}`);

  return {
    cancelled,
    timedOut,
    check(options, what) {
      if (options.signal.aborted) throw cancelled(what, options.signal);
      if (!hasTimeLeft(options.deadline)) throw timedOut(what, options.deadline);
    },
    sleep(ms, options, what) {
      const { signal, deadline } = options;
      if (signal.aborted) return Promise.reject(cancelled(what, signal));
      const now = Date.now();
      const outlasts = !hasTimeLeft(deadline, now + ms);
      const wait = outlasts ? Math.max(0, deadline.getTime() - now) : ms;
      // Nothing to wait for, and time left after it: no timer, no extra turn of the event loop.
      if (wait <= 0 && !outlasts) return Promise.resolve();
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
    },
  };
}
