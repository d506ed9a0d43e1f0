// Kubernetes `Status` failures. Every error the fake answers is one of these, shaped like the real
// API server's (reason, code, details with causes) so clients classify them the same way.
import { qualifiedResource, type ResourceType } from './resources.ts';

export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export class KubeError extends Error {
  override readonly name = 'KubeError';

  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

function resourceDetails(resource: ResourceType, name: string): StatusDetails {
  return { name, group: resource.group, kind: resource.plural };
}

export function notFound(resource: ResourceType, name: string): KubeError {
  const message = `${qualifiedResource(resource)} "${name}" not found`;
  return new KubeError(404, 'NotFound', message, resourceDetails(resource, name));
}

export function alreadyExists(resource: ResourceType, name: string): KubeError {
  const message = `${qualifiedResource(resource)} "${name}" already exists`;
  return new KubeError(409, 'AlreadyExists', message, resourceDetails(resource, name));
}

export function conflict(resource: ResourceType, name: string, why: string): KubeError {
  const message = `Operation cannot be fulfilled on ${qualifiedResource(resource)} "${name}": ${why}`;
  return new KubeError(409, 'Conflict', message, resourceDetails(resource, name));
}

export const STALE_OBJECT =
  'the object has been modified; please apply your changes to the latest version and try again';

export function invalid(resource: ResourceType, name: string, causes: StatusCause[]): KubeError {
  const kind = resource.group === '' ? resource.kind : `${resource.kind}.${resource.group}`;
  const listed = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const joined = listed.length === 1 ? (listed[0] ?? '') : `[${listed.join(', ')}]`;
  return new KubeError(422, 'Invalid', `${kind} "${name}" is invalid: ${joined}`, {
    name,
    group: resource.group,
    kind: resource.kind,
    causes,
  });
}

export function forbidden(resource: ResourceType, name: string, why: string): KubeError {
  const message = `${qualifiedResource(resource)} "${name}" is forbidden: ${why}`;
  return new KubeError(403, 'Forbidden', message, resourceDetails(resource, name));
}

export function badRequest(message: string): KubeError {
  return new KubeError(400, 'BadRequest', message);
}

/** A failure injected by a test: the reason follows the code the way the API server pairs them. */
export function injected(
  code: number,
  verb: string | undefined,
  resource?: ResourceType,
  name?: string,
): KubeError {
  const reason = code === 409 && verb === 'create' ? 'AlreadyExists' : (REASONS[code] ?? 'Unknown');
  const details: StatusDetails = resource ? resourceDetails(resource, name ?? '') : {};
  if (code === 429 || code === 503) details.retryAfterSeconds = 1;
  return new KubeError(code, reason, `injected fault: ${reason} (${code})`, details);
}

export function cause(field: string, reason: string, message: string): StatusCause {
  return { field, reason, message };
}
