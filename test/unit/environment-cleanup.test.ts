// The cleanup region's rules about the Workspace, on snapshot fixtures: a late resource holds its
// source's Workspace and the receipt detaches it only when the source lifecycle generation is the
// Environment's current one; for an older source generation the current Workspace is neither read
// nor changed. (Lifecycle generations do not advance yet, so an older source exists only as a
// fixture until the issue that advances them.)
import { describe, expect, it } from 'vitest';
import { claimRecordOf, cleanupRecordsOf, releasedRecordOf } from '../../machines/environment-cleanup.ts';
import type { EnvironmentContext } from '../../machines/environment-context.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { claimCleanup, cleanupReleased, lateResource } from '../support/environment-events.ts';
import { initialModel } from '../support/environment-model.ts';

/** A context whose lifecycle generation is `current`, holding the item a late resource of `source` made. */
function fixture(current: number, source: number) {
  const base = initialModel().snapshot.context;
  const recorded = lateResource({
    operationId: 'op-1',
    lifecycleGeneration: source,
    resourceGeneration: 1,
    providerFence: 1,
  });
  const context: EnvironmentContext = {
    ...base,
    lifecycleGeneration: current,
    sandbox: { ...base.sandbox, counters: { ...base.sandbox.counters, providerFence: 1 } },
  };
  return { context, recorded };
}

function claimed(context: EnvironmentContext, recorded: EnvironmentEvent): EnvironmentContext {
  if (recorded.type !== 'cleanup.recorded') throw new Error('fixture');
  const [item] = recorded.items;
  if (item === undefined) throw new Error('fixture');
  return {
    ...context,
    cleanups: {
      [item.cleanupId]: {
        state: 'Claimed',
        resourceId: item.resource.resourceId,
        source: item.source,
        claimToken: 'claim-1',
        claimExpiresAt: '2026-01-01T00:00:30.000Z',
        attemptId: 'cleanup-op-1.cleanup.claim-1',
        authorizingFence: { lifecycleGeneration: context.lifecycleGeneration, providerFence: 1 },
      },
    },
  };
}

describe('late-resource cleanup and the Workspace', () => {
  it('holds and then detaches the source Workspace when the source lifecycle generation is current', () => {
    const { context, recorded } = fixture(1, 1);
    expect(cleanupRecordsOf(context, recorded)).toEqual([expect.objectContaining({ holdWorkspace: true })]);
    const held = claimed(context, recorded);
    const receipt = cleanupReleased('cleanup-op-1', 'cleanup-op-1.cleanup.claim-1', 'claim-1');
    expect(releasedRecordOf(held, receipt).detachWorkspace).toEqual({ volumeId: 'vol-1', lease: 1 });
  });

  it('neither holds nor detaches anything for an older source lifecycle generation', () => {
    const { context, recorded } = fixture(2, 1);
    expect(cleanupRecordsOf(context, recorded)).toEqual([expect.objectContaining({ holdWorkspace: false })]);
    const held = claimed(context, recorded);
    const receipt = cleanupReleased('cleanup-op-1', 'cleanup-op-1.cleanup.claim-1', 'claim-1');
    expect(releasedRecordOf(held, receipt).detachWorkspace).toBeNull();
  });

  it('a claim is authorized by the owner fence current at the claim, across lifecycle generations', () => {
    const { context, recorded } = fixture(2, 1);
    const held = claimed(context, recorded);
    const record = claimRecordOf(held, claimCleanup('cleanup-op-1', 'claim-1'));
    expect(record.authorizingFence).toEqual({ lifecycleGeneration: 2, providerFence: 1 });
  });
});
