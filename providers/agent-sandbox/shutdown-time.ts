// The claim's `spec.lifecycle.shutdownTime`: the lease's expiry plus the snapshot's grace. Sandlot
// never releases a sandbox because its lease expired; this cluster-side time is only a backstop for
// a sandbox whose control plane is gone, so it lies far past the expiry (a day by default). The
// claim controller deletes an expired DeleteForeground claim, and the Sandbox and Pod with it.
import { definitive } from '../errors.ts';

/** Epoch milliseconds of an ISO instant; anything else is refused before anything is applied. */
export function instantMs(value: unknown, what: string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw definitive('invalid-request', `${what} must be an ISO instant`);
  return ms;
}

/**
 * RFC 3339 in whole seconds, rounded up: the API server keeps `metav1.Time` to the second, so what
 * we write is what we read back (a repeat compares equal), and the backstop is never earlier.
 */
export function shutdownTimeFor(expiresAt: string, graceSeconds: number): string {
  const ms = instantMs(expiresAt, 'expiresAt') + graceSeconds * 1000;
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

/** Whether a claim's recorded shutdown time is already `wanted` (compared as instants). */
export function sameShutdownTime(recorded: unknown, wanted: string): boolean {
  return typeof recorded === 'string' && Date.parse(recorded) === Date.parse(wanted);
}
