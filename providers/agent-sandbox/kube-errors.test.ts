import { describe, expect, it } from 'vitest';
import { ApiException } from './client-node.ts';
import { isAlreadyExists, isNotFound, mapKubeError, type Verb } from './kube-errors.ts';

function apiError(code: number, reason: string, name?: string): ApiException<string> {
  const status = {
    kind: 'Status',
    code,
    reason,
    message: `${reason} ${name ?? ''}`,
    details: name ? { name } : {},
  };
  return new ApiException(code, 'Unknown API Status Code!', JSON.stringify(status), {});
}

describe('Kubernetes error classification', () => {
  it('counts a 404 as absence only when it names the object asked for', () => {
    expect(isNotFound(apiError(404, 'NotFound', 'sl-abc'), 'sl-abc')).toBe(true);
    // The route itself is missing (CRDs not installed): says nothing about the object.
    expect(isNotFound(apiError(404, 'NotFound'), 'sl-abc')).toBe(false);
    expect(isNotFound(apiError(404, 'NotFound', 'other'), 'sl-abc')).toBe(false);
    expect(isNotFound(new Error('socket hang up'), 'sl-abc')).toBe(false);
  });

  it('tells AlreadyExists from other conflicts', () => {
    expect(isAlreadyExists(apiError(409, 'AlreadyExists', 'x'))).toBe(true);
    expect(isAlreadyExists(apiError(409, 'Conflict', 'x'))).toBe(false);
  });

  it.each<[number, string, Verb, string]>([
    [422, 'Invalid', 'create', 'definitive'],
    [400, 'BadRequest', 'create', 'definitive'],
    [403, 'Forbidden', 'create', 'definitive'],
    [401, 'Unauthorized', 'create', 'definitive'],
    [403, 'Forbidden', 'read', 'uncertain'],
    [403, 'Forbidden', 'delete', 'uncertain'],
    [401, 'Unauthorized', 'list', 'uncertain'],
    [500, 'InternalError', 'create', 'uncertain'],
    [503, 'ServiceUnavailable', 'read', 'uncertain'],
    [429, 'TooManyRequests', 'create', 'uncertain'],
    [409, 'Conflict', 'create', 'uncertain'],
    [504, 'Timeout', 'delete', 'uncertain'],
  ])('%i %s on %s is %s', (code, reason, verb, kind) => {
    expect(mapKubeError(apiError(code, reason, 'x'), verb, 'SandboxClaim x').kind).toBe(kind);
  });

  it('treats a transport failure as uncertain, whatever the verb', () => {
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    for (const verb of ['create', 'read', 'list', 'delete'] as const) {
      expect(mapKubeError(reset, verb, 'SandboxClaim x')).toMatchObject({
        kind: 'uncertain',
        code: 'transport',
      });
    }
  });
});
