// The one place errors become HTTP problems. Actor errors carry stable codes; anything unknown is a
// 500 whose body says nothing about internals (the log has the stack, never a credential).
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import {
  ActorError,
  ForbiddenError,
  MachineVersionUnsupportedError,
  ProviderSelectionError,
  ReleaseBlockedError,
  ReleaseConflictError,
  StaleLeaseFenceError,
  SnapshotQuarantinedError,
  StaleFenceError,
} from '../actors/errors.ts';
import { UpstreamError } from './clients/fetch-json.ts';
import { Problem, badRequest, conflict, forbidden } from './problems.ts';

export function invalidRequest(error: ZodError, target: string): Problem {
  const errors = error.issues.map((issue) => ({
    location: target,
    path: issue.path.map(String).join('.'),
    message: issue.message,
  }));
  const first = errors[0];
  const detail =
    first === undefined
      ? `invalid ${target}`
      : `${target} ${first.path === '' ? '' : `${first.path}: `}${first.message}`;
  return badRequest('invalid-request', 'Invalid request', detail, { errors });
}

export function toProblem(error: unknown): Problem | null {
  if (error instanceof Problem) return error;
  if (error instanceof HTTPException) {
    return error.status === 400
      ? badRequest('malformed-request', 'Malformed request', 'the request body is not valid JSON')
      : new Problem(error.status, 'http-error', error.message || 'HTTP error');
  }
  if (error instanceof UpstreamError)
    return new Problem(503, error.code, 'Upstream unavailable', error.message);
  if (!(error instanceof ActorError)) return null;
  if (error instanceof ForbiddenError) return forbidden(error.message);
  if (error instanceof StaleFenceError) {
    return conflict('lifecycle-generation-mismatch', 'Lifecycle generation mismatch', error.message, {
      expectedLifecycleGeneration: error.expected,
      currentLifecycleGeneration: error.actual,
    });
  }
  if (error instanceof ReleaseConflictError) {
    return conflict('release-conflict', 'Release already requested', error.message, { state: error.state });
  }
  if (error instanceof SnapshotQuarantinedError || error instanceof MachineVersionUnsupportedError) {
    return new Problem(503, error.code, 'Environment unavailable', error.message);
  }
  if (error instanceof ProviderSelectionError) {
    const status = error.reason === 'mismatch' ? 409 : 422;
    return new Problem(status, error.code, 'Provider selection unusable', error.message, {
      mismatches: error.mismatches,
    });
  }
  if (error instanceof ReleaseBlockedError) {
    return conflict('release-blocked', 'Release blocked', error.message, {
      unresolvedAttempts: error.unresolvedAttempts,
    });
  }
  if (error instanceof StaleLeaseFenceError) {
    return conflict('stale-fence', 'Stale lease fence', error.message, { current: error.current });
  }
  switch (error.code) {
    case 'lease-not-found':
      return new Problem(404, 'lease-not-found', 'Lease not found', error.message);
    case 'workspace-unavailable':
      return conflict('workspace-unavailable', 'Workspace unavailable', error.message);
    case 'network-policy-unverified':
      return conflict('network-policy-unverified', 'Network policy not verified', error.message);
    case 'network-policy-unavailable':
      // The policy's source did not answer: neither verified nor refused, so retry later.
      return new Problem(503, 'network-policy-unavailable', 'Network policy unavailable', error.message);
    case 'environment-not-found':
      return new Problem(404, 'environment-not-found', 'Environment not found', error.message);
    case 'run-selection-missing':
      return conflict('run-selection-missing', 'Run selection missing', error.message);
    case 'run-selection-changed':
      return conflict('run-selection-changed', 'Run selection changed', error.message);
    default:
      return conflict(error.code, 'Conflict', error.message);
  }
}
