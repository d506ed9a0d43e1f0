// The one place errors become HTTP answers. Every error Sandlot raises on purpose is a SandlotError
// that declares its own status and problem type, so nothing here lists codes. Anything else is
// unmapped: a 500 `internal-error` whose body says nothing about it, logged with its stack (the
// log never holds a credential, because no error message carries one).
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import { SandlotError } from '../lib/errors.ts';
import { Problem, badRequest, internalError, problemResponse } from './problems.ts';

/** The part of a pino logger the error handler uses. */
export interface ErrorLogger {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

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

/** The problem an error answers with, or null when it is unmapped. */
export function toProblem(error: unknown): SandlotError | null {
  if (error instanceof SandlotError) return error;
  // Raised by Hono itself: a body that does not parse as JSON, in practice.
  if (error instanceof HTTPException) {
    if (error.status === 400) {
      return badRequest('malformed-request', 'Malformed request', 'the request body is not valid JSON');
    }
    if (error.status === 415) {
      return new Problem(
        415,
        'unsupported-media-type',
        'Unsupported media type',
        'send the body as application/json',
      );
    }
    return new Problem(error.status, 'http-error', error.message || 'HTTP error');
  }
  return null;
}

/**
 * The app's single `onError`. A server-side failure (5xx) is logged as one structured line: at
 * `error` for a 500 (a bug, or an error nobody declared), at `warn` for a declared unavailability.
 */
export function errorHandler(logger: ErrorLogger) {
  return (error: Error, c: Context): Response => {
    const where = { method: c.req.method, path: c.req.path };
    const problem = toProblem(error);
    if (problem === null) {
      logger.error({ err: error, ...where }, 'unmapped error');
      return problemResponse(internalError(), c.req.path);
    }
    if (problem.status >= 500) {
      const level = problem.status === 500 ? 'error' : 'warn';
      logger[level]({ err: error, code: problem.code, ...where }, 'request failed');
    }
    return problemResponse(problem, c.req.path);
  };
}
