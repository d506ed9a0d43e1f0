// Timers for shutdown and publish paths. Every timer here is unref'd: a pending deadline must never
// be the thing that keeps a finished process alive.

/** After a close timeout aborts the running jobs, how long they get to react before we move on. */
export const ABORT_GRACE_MS = 2_000;

/** Resolves true if `promise` settled (either way) within `ms`, false otherwise. */
export async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  const settled = promise.then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([settled, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Rejects with `onTimeout()` after `ms`; a late rejection of `promise` is then ignored. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  promise.catch(() => undefined);
  if (!(await settleWithin(promise, ms))) throw onTimeout();
  return promise;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
