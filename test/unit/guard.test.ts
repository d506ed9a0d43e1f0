// The Guard asks fresh authority and the run's selection at once, where both are needed: the two
// upstream questions overlap, and the permission's answer still decides first.
import { describe, expect, it } from 'vitest';
import { ForbiddenError, RunSelectionMissingError } from '../../actors/errors.ts';
import { Guard } from '../../actors/guard.ts';
import type { Permission, ProjectsAuthority, RunSelection, RunSelectionSource } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';

const selection: RunSelection = {
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  candidates: [],
  selectionHash: 'h1',
};

/** An upstream that answers only when released, and counts what is in flight. */
function gated<T>(answer: () => T) {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = { asked: 0 };
  const ask = async () => {
    state.asked++;
    await gate;
    return answer();
  };
  return { ask, state, release: () => release() };
}

function guardWith(authority: ProjectsAuthority, selections: RunSelectionSource) {
  return new Guard(
    { db: {} as Queryable, authority, selections },
    { tenantId: 'acme', subject: 'alice' },
    'checkout',
    ['WriteProjects'],
  );
}

describe('Guard.checkWithSelection', () => {
  it('asks the authority and the selection at once, and answers the selection', async () => {
    const permissions = gated(() => new Set<Permission>(['WriteProjects']));
    const selected = gated(() => selection);
    const guard = guardWith({ permissions: permissions.ask }, { get: selected.ask });
    const answer = guard.checkWithSelection('run-1');
    await new Promise((resolve) => setImmediate(resolve));
    // Both questions are out before either answered.
    expect(permissions.state.asked).toBe(1);
    expect(selected.state.asked).toBe(1);
    selected.release();
    permissions.release();
    await expect(answer).resolves.toEqual(selection);
  });

  it('a caller without the permission gets 403, whatever the selection service said', async () => {
    const guard = guardWith(
      { permissions: () => Promise.resolve(new Set<Permission>()) },
      { get: () => Promise.reject(new Error('selection service down')) },
    );
    await expect(guard.checkWithSelection('run-1')).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('with the permission, a run without a selection is the answer', async () => {
    const guard = guardWith(
      { permissions: () => Promise.resolve(new Set<Permission>(['WriteProjects'])) },
      { get: () => Promise.resolve(null) },
    );
    await expect(guard.checkWithSelection('run-1')).rejects.toBeInstanceOf(RunSelectionMissingError);
  });
});
