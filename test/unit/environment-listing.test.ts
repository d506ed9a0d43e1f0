// The listing columns an operator's filters read are projected from the snapshot the writer commits.
import type { AnyMachineSnapshot } from 'xstate';
import { describe, expect, it } from 'vitest';
import { environmentDefinition } from '../../actors/environment-definition.ts';

const snapshotOf = (sandbox: string, context: Record<string, unknown>) =>
  ({ value: { lifecycle: 'Registered', sandbox }, context }) as unknown as AnyMachineSnapshot;

describe('the Environment listing projection', () => {
  it('counts what blocks a release: unresolved attempts, an open reconciliation, open cleanups', () => {
    const projected = environmentDefinition.project(
      snapshotOf('ReconciliationRequired', {
        lifecycleGeneration: 2,
        sandbox: {
          lease: { expiresAt: '2026-12-04T18:00:00.000Z', reconcileAttemptId: 'att-9' },
          unresolved: { 'att-1': { kind: 'provision' }, 'att-2': { kind: 'release' } },
        },
        cleanups: { 'cl-1': {}, 'cl-2': {}, 'cl-3': {} },
      }),
    );
    expect(projected).toEqual({
      lifecycleState: 'Registered',
      lifecycleGeneration: 2,
      listing: {
        sandboxState: 'ReconciliationRequired',
        leaseExpiresAt: '2026-12-04T18:00:00.000Z',
        unresolvedAttempts: 3,
        openCleanups: 3,
      },
    });
  });

  it('lists an Environment with no lease as NoLease with nothing open', () => {
    const projected = environmentDefinition.project(
      snapshotOf('NoLease', {
        lifecycleGeneration: 1,
        sandbox: { lease: null, unresolved: {} },
        cleanups: {},
      }),
    );
    expect(projected.listing).toEqual({
      sandboxState: 'NoLease',
      leaseExpiresAt: null,
      unresolvedAttempts: 0,
      openCleanups: 0,
    });
  });
});
