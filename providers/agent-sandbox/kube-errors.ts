// Kubernetes API failures, classified once. Only a create the API server refused (validation,
// authorization) proves nothing was applied; a read or delete that failed proves nothing at all, and
// transport failures (timeouts, resets, 5xx) may hide an applied effect. 404 and 409 on the exact
// calls that expect them are handled by the caller (absent, AlreadyExists), not here.
import { ApiException } from './client-node.ts';
import { callBudget } from '../call-budget.ts';
import { definitive, ProviderError, uncertain } from '../errors.ts';

export type Verb = 'read' | 'list' | 'create' | 'patch' | 'delete';

/** The adapter's call budget: every request and every wait between requests is bounded by it. */
export const budget = callBudget('Agent Sandbox');

export interface StatusDetails {
  code: number;
  reason: string;
  message: string;
  /** `details.name` of the Status: the object the answer is about, when it is about one. */
  name: string;
}

const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The HTTP status and Kubernetes Status reason of an API error, if it is one. */
export function statusOf(error: unknown): StatusDetails | undefined {
  if (!(error instanceof ApiException) && !(error instanceof Error && error.name === 'ApiException')) {
    return undefined;
  }
  const { code, body } = error as ApiException<unknown>;
  if (typeof code !== 'number') return undefined;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
  }
  const status = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const details =
    typeof status.details === 'object' ? (status.details as Record<string, unknown> | null) : null;
  return {
    code,
    reason: typeof status.reason === 'string' ? status.reason : '',
    message: typeof status.message === 'string' ? clip(status.message) : '',
    name: typeof details?.name === 'string' ? details.name : '',
  };
}

/**
 * A 404 that names `name`: the object is absent. A 404 without it (no such API group or resource,
 * say, when the CRDs are not installed) says nothing about the object and is not absence.
 */
export const isNotFound = (error: unknown, name: string) => {
  const status = statusOf(error);
  return status?.code === 404 && status.reason === 'NotFound' && status.name === name;
};
export const isAlreadyExists = (error: unknown) => {
  const status = statusOf(error);
  return status?.code === 409 && status.reason === 'AlreadyExists';
};

/** What a failed request means for the call: definitive only for a create or patch the server refused. */
export function mapKubeError(error: unknown, verb: Verb, what: string): ProviderError {
  if (error instanceof ProviderError) return error;
  const status = statusOf(error);
  if (status === undefined) {
    const reason = error instanceof Error ? error.message : String(error);
    return uncertain('transport', `Kubernetes ${verb} of ${what} got no answer: ${clip(reason)}`, error);
  }
  const detail = `Kubernetes ${verb} of ${what} answered ${status.code}${status.reason ? ` ${status.reason}` : ''}${
    status.message ? `: ${status.message}` : ''
  }`;
  const refusal =
    status.code === 400 ||
    status.code === 401 ||
    status.code === 403 ||
    status.code === 404 ||
    status.code === 422;
  if ((verb === 'create' || verb === 'patch') && refusal) {
    return definitive(`${verb}-refused-${status.code}`, detail);
  }
  if (status.code === 401 || status.code === 403) return uncertain(`forbidden-${status.code}`, detail, error);
  return uncertain(`http-${status.code}`, detail, error);
}
