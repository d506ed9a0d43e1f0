// Provider failures, classified once. `definitive` means the provider proved the call had no effect
// (a validation refusal before anything was applied); everything else is uncertain, and an
// uncertain outcome is never treated as failure: the attempt becomes Unknown and is reconciled.
// That classification is this file's concern; the base class only gives ProviderError the project's
// error shape (kebab-case `code`, `name`). A provider failure reaches callers as an attempt outcome,
// not as an HTTP problem; should one escape to the HTTP layer it is a 502 that shows no detail.
import { problemClass } from '../lib/errors.ts';

export type ProviderFailureKind = 'definitive' | 'uncertain' | 'ownership';

export class ProviderError extends problemClass({ status: 502, title: 'Provider call failed' }) {
  constructor(
    code: string,
    readonly kind: ProviderFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { ...options, code });
  }
}

/** The provider refused the request before applying anything (bad request, quota, validation). */
export const definitive = (code: string, message: string) => new ProviderError(code, 'definitive', message);

/** Timeout, cancellation, 5xx, reset, lost response: the effect may or may not have happened. */
export const uncertain = (code: string, message: string, cause?: unknown) =>
  new ProviderError(code, 'uncertain', message, { cause });

/** A resource answered that is not ours (labels, UID, fence): an invariant violation, never adopted. */
export const ownership = (code: string, message: string) => new ProviderError(code, 'ownership', message);

/** The one place that decides: anything not explicitly definitive is uncertain. */
export function classifyProviderFailure(error: unknown): ProviderFailureKind {
  if (error instanceof ProviderError || (error instanceof Error && error.name === 'ProviderError')) {
    const kind = (error as ProviderError).kind;
    if (kind === 'definitive' || kind === 'ownership') return kind;
  }
  return 'uncertain';
}
