import { describe, expect, it } from 'vitest';
import {
  DatabaseUnavailableError,
  InvalidValueError,
  asDatabaseError,
  classifyDatabaseError,
} from '../../store/database-errors.ts';
import { LeaseConflictError } from '../../actors/errors.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('database failures are classified in one place', () => {
  it.each([
    ['57P01 admin shutdown', withCode('57P01'), 'connection'],
    ['57P03 cannot connect now', withCode('57P03'), 'connection'],
    ['08006 connection failure', withCode('08006'), 'connection'],
    ['53300 too many connections', withCode('53300'), 'connection'],
    ['ECONNREFUSED', withCode('ECONNREFUSED'), 'connection'],
    ['a socket closed under the driver', new Error('Connection terminated unexpectedly'), 'connection'],
    ['40001 serialization failure', withCode('40001'), 'conflict'],
    ['40P01 deadlock', withCode('40P01'), 'conflict'],
    ['22021 NUL byte', withCode('22021'), 'data'],
    ['22003 integer out of range', withCode('22003'), 'data'],
    ['23505 unique violation', withCode('23505'), 'other'],
    ['a plain bug', new TypeError('undefined is not a function'), 'other'],
    ['a domain error, whatever its code', new LeaseConflictError('lease-conflict', 'x'), 'other'],
  ])('%s', (_name, error, kind) => {
    expect(classifyDatabaseError(error)).toBe(kind);
  });

  it('answers a lost database with 503 and a retry hint, a refused value with 400', () => {
    const lost = asDatabaseError(withCode('57P01', 'terminating connection due to administrator command'));
    expect(lost).toBeInstanceOf(DatabaseUnavailableError);
    expect(lost).toMatchObject({ status: 503, code: 'database-unavailable', retryAfterSeconds: 2 });
    const bad = asDatabaseError(withCode('22021', 'invalid byte sequence for encoding "UTF8": 0x00'));
    expect(bad).toBeInstanceOf(InvalidValueError);
    expect(bad).toMatchObject({ status: 400, code: 'invalid-value' });
    const other = withCode('23505');
    expect(asDatabaseError(other)).toBe(other);
  });
});
