// What a database failure means, decided in one place. PostgreSQL reports SQLSTATEs; the pg driver
// reports lost sockets with Node error codes or bare messages. Four kinds:
//   connection — the server went away or refuses us (57P01 admin shutdown, 57P02, 57P03, class 08,
//                53300 too many connections, a reset socket): the request gets 503 with Retry-After;
//   conflict   — serialization failure (40001) or deadlock (40P01): the whole transaction is retried
//                a bounded number of times;
//   data       — class 22 (a value PostgreSQL cannot take: a NUL byte, an integer out of range):
//                the request was bad, 400, never 500 or 503;
//   other      — a bug or an unexpected state: left as it is (an unmapped 500).
import { problemClass, SandlotError } from '../lib/errors.ts';

export type DatabaseFailure = 'connection' | 'conflict' | 'data' | 'other';

const connectionCodes = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const connectionMessages = [
  'Connection terminated',
  'connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
];

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

export function classifyDatabaseError(error: unknown): DatabaseFailure {
  if (error instanceof SandlotError) return 'other';
  const code = codeOf(error);
  if (code !== undefined) {
    if (connectionCodes.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return 'connection';
    if (code === '40001' || code === '40P01') return 'conflict';
    if (/^22[0-9A-Z]{3}$/.test(code)) return 'data';
  }
  const message = error instanceof Error ? error.message : '';
  if (connectionMessages.some((m) => message.includes(m))) return 'connection';
  return 'other';
}

/** The database cannot be reached now; nothing was committed by this request. Retry later. */
export class DatabaseUnavailableError extends problemClass({
  code: 'database-unavailable',
  status: 503,
  title: 'Database unavailable',
  retryAfterSeconds: 2,
}) {
  override get detail(): string {
    return 'the database did not answer; nothing was changed, retry shortly';
  }
}

/** PostgreSQL refused a value the request carried (class 22); nothing was changed. */
export class InvalidValueError extends problemClass({
  code: 'invalid-value',
  status: 400,
  title: 'Invalid value',
}) {
  override get detail(): string {
    return 'a value in the request cannot be stored (out of range or not valid text); nothing was changed';
  }
}

/** Turns a driver error into the error callers see: 503 for a lost database, 400 for a bad value. */
export function asDatabaseError(error: unknown): unknown {
  switch (classifyDatabaseError(error)) {
    case 'connection':
      return new DatabaseUnavailableError(error instanceof Error ? error.message : String(error), {
        cause: error,
      });
    case 'data':
      return new InvalidValueError(error instanceof Error ? error.message : String(error), { cause: error });
    default:
      return error;
  }
}
