// The error convention, end to end without a database: every exported error class answers through
// the app's real onError with the status and problem type it declares, and anything unmapped is a
// logged 500 whose body says nothing about the error.
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';

import * as actorErrors from '../../actors/errors.ts';
import * as admission from '../../actors/sandbox/admission.ts';
import * as configErrors from '../../config/errors.ts';
import * as authErrors from '../../http/auth/authentication-error.ts';
import * as fetchJson from '../../http/clients/fetch-json.ts';
import { errorHandler } from '../../http/errors.ts';
import * as problems from '../../http/problems.ts';
import { ERROR_CODE_PATTERN, SandlotError } from '../../lib/errors.ts';
import * as providerErrors from '../../providers/errors.ts';
import * as storeErrors from '../../store/errors.ts';
import * as workerErrors from '../../workers/errors.ts';

interface Expected {
  status: number;
  code: string;
  /** The body's `detail`, or `undefined` when the body must have none. */
  detail?: string;
  extensions?: Record<string, unknown>;
}

const current = { resourceGeneration: 2, providerFence: 3 };
const mismatches = [{ field: 'providerId', selected: 'a', configured: 'b' }];

// One entry per exported error class (the completeness test below enforces it). Extra entries for
// classes whose status or code depends on their arguments.
const cases: readonly [string, () => Error, Expected][] = [
  [
    'ActorError',
    () => new actorErrors.ActorError('secret 42', { code: 'undeclared-thing' }),
    { status: 500, code: 'undeclared-thing' },
  ],
  [
    'EnvironmentNotFoundError',
    () => new actorErrors.EnvironmentNotFoundError('env_x'),
    { status: 404, code: 'environment-not-found', detail: 'Environment env_x does not exist' },
  ],
  [
    'StaleFenceError',
    () => new actorErrors.StaleFenceError('lifecycleGeneration', 2, 1),
    {
      status: 409,
      code: 'lifecycle-generation-mismatch',
      detail: 'lifecycleGeneration is 1, the event expected 2',
      extensions: { expectedLifecycleGeneration: 2, currentLifecycleGeneration: 1 },
    },
  ],
  [
    'SnapshotQuarantinedError',
    () => new actorErrors.SnapshotQuarantinedError('env_x', 'bad snapshot'),
    {
      status: 503,
      code: 'environment-quarantined',
      detail: 'Environment env_x is quarantined: bad snapshot',
    },
  ],
  [
    'MachineVersionUnsupportedError',
    () => new actorErrors.MachineVersionUnsupportedError(3, 2),
    {
      status: 503,
      code: 'machine-version-unsupported',
      detail: 'snapshot machine version 3 is newer than 2',
    },
  ],
  [
    'RevisionConflictError',
    () => new actorErrors.RevisionConflictError('env_x', 4),
    { status: 409, code: 'revision-conflict', detail: 'Environment env_x changed under revision 4' },
  ],
  [
    'ForbiddenError',
    () => new actorErrors.ForbiddenError(['WriteProjects']),
    { status: 403, code: 'forbidden', detail: 'missing permission WriteProjects' },
  ],
  [
    'RunBindingError',
    () => new actorErrors.RunBindingError('the token is bound to another project or run'),
    { status: 403, code: 'run-binding-required', detail: 'the token is bound to another project or run' },
  ],
  [
    'InvalidCursorError',
    () => new actorErrors.InvalidCursorError('was given for another scope or other filters'),
    {
      status: 400,
      code: 'invalid-cursor',
      detail:
        'the cursor was given for another scope or other filters: ask for the first page again without it',
    },
  ],
  [
    'PlacementRefusedError',
    () => new actorErrors.PlacementRefusedError('lease-expired', 'the current lease expired'),
    { status: 409, code: 'lease-expired', detail: 'the current lease expired' },
  ],
  [
    'RunSelectionMissingError',
    () => new actorErrors.RunSelectionMissingError('run-1'),
    { status: 409, code: 'run-selection-missing', detail: 'run run-1 has no provider selection' },
  ],
  [
    'RunSelectionChangedError',
    () => new actorErrors.RunSelectionChangedError('run-1'),
    {
      status: 409,
      code: 'run-selection-changed',
      detail: 'the provider selection of run run-1 no longer matches the Environment',
    },
  ],
  [
    'ReleaseConflictError',
    () => new actorErrors.ReleaseConflictError('Released'),
    {
      status: 409,
      code: 'release-conflict',
      detail: 'the Environment is already Released under a different idempotency key',
      extensions: { state: 'Released' },
    },
  ],
  [
    'WorkspaceFlushConflictError',
    () =>
      new actorErrors.WorkspaceFlushConflictError('workspace-flush-closed', 'flush fl-1 is no longer open'),
    { status: 409, code: 'workspace-flush-closed', detail: 'flush fl-1 is no longer open' },
  ],
  [
    'WorkspaceConflictError',
    () => new actorErrors.WorkspaceConflictError('vol-1'),
    {
      status: 409,
      code: 'workspace-unavailable',
      detail: 'workspace volume vol-1 is not available at the requested generation',
    },
  ],
  [
    'ProviderSelectionError',
    () => new actorErrors.ProviderSelectionError('mismatch', mismatches, 'differs'),
    { status: 409, code: 'provider-selection-mismatch', detail: 'differs', extensions: { mismatches } },
  ],
  [
    'ProviderSelectionError',
    () => new actorErrors.ProviderSelectionError('several-exclusive-candidates', [], 'two'),
    { status: 422, code: 'provider-selection-invalid', detail: 'two', extensions: { mismatches: [] } },
  ],
  [
    'NetworkPolicyUnverifiedError',
    () => new actorErrors.NetworkPolicyUnverifiedError('not newest'),
    { status: 409, code: 'network-policy-unverified', detail: 'not newest' },
  ],
  [
    'LeaseConflictError',
    () => new actorErrors.LeaseConflictError('lease-not-abandonable', 'the lease is Released'),
    { status: 409, code: 'lease-not-abandonable', detail: 'the lease is Released' },
  ],
  [
    'LeaseNotFoundError',
    () => new actorErrors.LeaseNotFoundError('no lease'),
    { status: 404, code: 'lease-not-found', detail: 'no lease' },
  ],
  [
    'StaleLeaseFenceError',
    () => new actorErrors.StaleLeaseFenceError(current, 'old fence'),
    { status: 409, code: 'stale-fence', detail: 'old fence', extensions: { current } },
  ],
  [
    'ReleaseBlockedError',
    () => new actorErrors.ReleaseBlockedError(['att_1']),
    {
      status: 409,
      code: 'release-blocked',
      detail: 'release waits for 1 unresolved provider attempt(s); reconcile them first',
      extensions: { unresolvedAttempts: ['att_1'], pendingCleanups: [] },
    },
  ],
  [
    'ReleaseBlockedError',
    () => new actorErrors.ReleaseBlockedError([], ['cleanup_1']),
    {
      status: 409,
      code: 'release-blocked',
      detail:
        'release waits for 0 unresolved provider attempt(s) and 1 late-resource cleanup(s); reconcile them first',
      extensions: { unresolvedAttempts: [], pendingCleanups: ['cleanup_1'] },
    },
  ],
  [
    'NetworkPolicyUnavailableError',
    () => new admission.NetworkPolicyUnavailableError(7, new Error('boom')),
    {
      status: 503,
      code: 'network-policy-unavailable',
      detail: 'network policy generation 7 cannot be verified now: its source did not answer',
    },
  ],
  [
    'AuthenticationError',
    () => new authErrors.AuthenticationError('token expired', true),
    { status: 401, code: 'unauthenticated', detail: 'token expired' },
  ],
  [
    'UpstreamError',
    () => new fetchJson.UpstreamError('Projects', 'HTTP 500'),
    { status: 503, code: 'upstream-unavailable', detail: 'Projects is unavailable: HTTP 500' },
  ],
  [
    'Problem',
    () =>
      new problems.Problem(403, 'operator-required', 'Operator token required', 'needs operator', {
        role: 'operator',
      }),
    { status: 403, code: 'operator-required', detail: 'needs operator', extensions: { role: 'operator' } },
  ],
  [
    'UnauthenticatedProblem',
    () => new problems.UnauthenticatedProblem('missing bearer token'),
    { status: 401, code: 'unauthenticated', detail: 'missing bearer token' },
  ],
  [
    'MigrationFileNameError',
    () => new storeErrors.MigrationFileNameError('bad name 2_x.sql'),
    { status: 500, code: 'migration-file-name' },
  ],
  [
    'MigrationChecksumError',
    () => new storeErrors.MigrationChecksumError('0001_a.sql', 'aa', 'bb'),
    { status: 500, code: 'migration-checksum' },
  ],
  [
    'MigrationFailedError',
    () => new storeErrors.MigrationFailedError('0001_a.sql', new Error('syntax error at "password"')),
    { status: 500, code: 'migration-failed' },
  ],
  [
    'ConfigError',
    () => new configErrors.ConfigError([{ variable: 'DATABASE_URL', reason: 'required' }]),
    { status: 500, code: 'config-invalid' },
  ],
  [
    'WorkerError',
    () => new workerErrors.WorkerError('internal state', { code: 'worker-stuck' }),
    { status: 500, code: 'worker-stuck' },
  ],
  [
    'InvalidAttemptIdError',
    () => new workerErrors.InvalidAttemptIdError('a:b'),
    { status: 500, code: 'invalid-attempt-id' },
  ],
  [
    'QueueClosedError',
    () => new workerErrors.QueueClosedError('effect queue'),
    { status: 503, code: 'queue-closed' },
  ],
  [
    'PublishTimeoutError',
    () => new workerErrors.PublishTimeoutError(5000),
    { status: 503, code: 'publish-timeout' },
  ],
  [
    'ProviderError',
    () => providerErrors.uncertain('timeout', 'describe timed out after 5000 ms'),
    { status: 502, code: 'timeout' },
  ],
];

interface LogLine {
  level: 'error' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

/** A tiny app wired with the real onError; `/boom` throws whatever `next` holds. */
function harness() {
  const lines: LogLine[] = [];
  const logger = {
    error: (fields: object, message: string) =>
      lines.push({ level: 'error', fields: { ...fields }, message }),
    warn: (fields: object, message: string) => lines.push({ level: 'warn', fields: { ...fields }, message }),
  };
  let next: Error = new Error('unset');
  const app = new Hono();
  app.onError(errorHandler(logger));
  app.get('/boom', () => {
    throw next;
  });
  const answer = async (error: Error) => {
    next = error;
    const res = await app.request('/boom');
    const text = await res.text();
    return { res, text, body: JSON.parse(text) as Record<string, unknown> };
  };
  return { answer, lines };
}

const exportedErrorClasses = (): string[] =>
  [
    actorErrors,
    admission,
    configErrors,
    authErrors,
    fetchJson,
    problems,
    providerErrors,
    storeErrors,
    workerErrors,
  ]
    .flatMap((module) => Object.entries(module) as [string, unknown][])
    .filter(
      ([, value]) =>
        typeof value === 'function' && (value as { prototype: unknown }).prototype instanceof Error,
    )
    .map(([name]) => name);

describe('error convention', () => {
  it('covers every exported error class, and every one extends SandlotError', () => {
    const names = exportedErrorClasses();
    // StoreError is abstract: its three subclasses stand for it.
    expect(new Set(names)).toEqual(new Set([...cases.map(([name]) => name), 'StoreError']));
    for (const [name, make] of cases) expect(make(), name).toBeInstanceOf(SandlotError);
  });

  it.each(cases)('%s answers with its declared status and problem type', async (name, make, expected) => {
    const error = make() as SandlotError;
    expect(error.name).toBe(name);
    expect(error.code).toMatch(ERROR_CODE_PATTERN);
    expect(error.status).toBe(expected.status);
    expect(error.code).toBe(expected.code);

    const { answer, lines } = harness();
    const { res, text, body } = await answer(error);
    expect(res.status).toBe(expected.status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(body).toEqual({
      type: `urn:sandlot:problem:${expected.code}`,
      title: error.title,
      status: expected.status,
      ...(expected.detail !== undefined ? { detail: expected.detail } : {}),
      instance: '/boom',
      ...expected.extensions,
    });
    // A message that is not declared caller-safe never reaches the body.
    if (expected.detail === undefined) expect(text).not.toContain(error.message);
    // Server-side failures leave one structured log line carrying the error; refusals leave none.
    if (expected.status >= 500) {
      expect(lines).toEqual([
        {
          level: expected.status === 500 ? 'error' : 'warn',
          fields: { err: error, code: expected.code, method: 'GET', path: '/boom' },
          message: 'request failed',
        },
      ]);
    } else {
      expect(lines).toEqual([]);
    }
  });

  it('gives the two fence errors distinct codes, each its own problem type', () => {
    const lifecycle = new actorErrors.StaleFenceError('lifecycleGeneration', 2, 1);
    const lease = new actorErrors.StaleLeaseFenceError(null, 'no lease');
    expect(lifecycle.code).not.toBe(lease.code);
  });

  it('answers a 401 error with a Bearer challenge that says whether a token was rejected', async () => {
    const { answer } = harness();
    const rejected = await answer(new authErrors.AuthenticationError('bad signature', true));
    expect(rejected.res.headers.get('www-authenticate')).toBe(
      'Bearer realm="sandlot", error="invalid_token"',
    );
    const missing = await answer(new problems.UnauthenticatedProblem('missing bearer token'));
    expect(missing.res.headers.get('www-authenticate')).toBe('Bearer realm="sandlot"');
  });

  it('answers an unknown error with a logged 500 internal-error that reveals nothing', async () => {
    const { answer, lines } = harness();
    const error = new TypeError('cannot read properties of undefined (reading "password=hunter2")');
    const { res, text, body } = await answer(error);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(body).toEqual({
      type: 'urn:sandlot:problem:internal-error',
      title: 'Internal error',
      status: 500,
      instance: '/boom',
    });
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('TypeError');
    expect(lines).toEqual([
      { level: 'error', fields: { err: error, method: 'GET', path: '/boom' }, message: 'unmapped error' },
    ]);
  });

  it('answers a framework 400 as malformed-request, not as an unmapped error', async () => {
    const { answer, lines } = harness();
    const { res, body } = await answer(new HTTPException(400, { message: 'Malformed JSON in request body' }));
    expect(res.status).toBe(400);
    expect(body).toMatchObject({ type: 'urn:sandlot:problem:malformed-request', status: 400 });
    expect(lines).toEqual([]);
  });
});
