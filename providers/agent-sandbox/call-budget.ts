// A call's budget: the caller's AbortSignal and deadline, passed to every HTTP request and every wait.
// Running out of budget is always uncertain: like any client, we cannot know what the far side did.
import { uncertain, type ProviderError } from '../errors.ts';
import type { CallOptions } from '../provider.ts';

export function cancelled(what: string, signal: AbortSignal): ProviderError {
  return uncertain('cancelled', `Agent Sandbox ${what} was cancelled by its caller`, signal.reason);
}

export function timedOut(what: string, deadline: Date): ProviderError {
  return uncertain('timeout', `Agent Sandbox ${what} passed its deadline ${deadline.toISOString()}`);
}

export function checkBudget(options: CallOptions, what: string): void {
  if (options.signal.aborted) throw cancelled(what, options.signal);
  if (Date.now() >= options.deadline.getTime()) throw timedOut(what, options.deadline);
}

/** The caller's signal, also aborted at the deadline: what every request carries. */
export function requestSignal(options: CallOptions): AbortSignal {
  const remaining = Math.max(0, options.deadline.getTime() - Date.now());
  return AbortSignal.any([options.signal, AbortSignal.timeout(remaining)]);
}

/** The same call, with its deadline brought forward to `limitMs` from now when that is sooner. */
export function narrowed(options: CallOptions, limitMs: number): CallOptions {
  const limit = Date.now() + limitMs;
  return limit < options.deadline.getTime() ? { signal: options.signal, deadline: new Date(limit) } : options;
}

/** Waits `ms`, or rejects (uncertain) when the signal aborts or the wait would pass the deadline. */
export function sleepWithin(ms: number, options: CallOptions, what: string): Promise<void> {
  const { signal, deadline } = options;
  if (signal.aborted) return Promise.reject(cancelled(what, signal));
  const remaining = deadline.getTime() - Date.now();
  const outlasts = ms >= remaining;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(what, signal));
    };
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        if (outlasts) reject(timedOut(what, deadline));
        else resolve();
      },
      Math.max(0, outlasts ? remaining : ms),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
