// The workspace region on the pure machine: a trusted flush is reserved only for the current Active
// lease and its volume, one at a time; each delivery is journaled before it runs; only a verified
// outcome on that lease, still Active, closes it as Verified with the volume transition to make;
// an uncertain delivery keeps the flush open; a closed flush never changes; older snapshots gain
// the region empty.
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { environmentDefinition } from '../../actors/environment-definition.ts';
import { environmentMachine } from '../../machines/environment.ts';
import type { EnvironmentEvent, FlushTerms } from '../../machines/environment-events.ts';
import { activeLease, effects } from '../support/active-lease.ts';
import {
  abandon,
  environmentInput,
  flushTerms,
  provision,
  result,
  type EnvironmentSnapshot,
} from '../support/environment-events.ts';

type Actions = readonly { type: string; params?: unknown }[];

const terms = flushTerms;
const reserve = (flushOperationId = 'fl-1', overrides: Partial<FlushTerms> = {}): EnvironmentEvent => ({
  type: 'workspace.flushReserve',
  flushOperationId,
  terms: { ...terms, ...overrides },
});
const flushed = (
  outcome: 'verified' | 'uncertain' | 'refused',
  flushOperationId = 'fl-1',
): EnvironmentEvent => ({
  type: 'workspace.flushed',
  flushOperationId,
  outcome,
  evidence: { said: outcome },
  receiptSha256: outcome === 'verified' ? 'e'.repeat(64) : null,
});

function send(snapshot: EnvironmentSnapshot, event: EnvironmentEvent) {
  const [next, actions]: [EnvironmentSnapshot, Actions] = transition(environmentMachine, snapshot, event);
  return { next, actions, changed: next !== snapshot };
}
const types = (actions: Actions) => actions.map((a) => a.type).filter((t) => t.startsWith('record.flush'));

describe('workspace region', () => {
  it('reserves a flush of the current Active lease, journaling its terms before the Host is asked', () => {
    const { next, actions } = send(activeLease(), reserve());
    expect(next.value).toMatchObject({ workspace: 'Flushing' });
    expect(next.context.flushes['fl-1']).toEqual({ state: 'Reserved', terms, deliveries: 1 });
    expect(actions.find((a) => a.type === 'record.flushReserved')?.params).toEqual({
      flushOperationId: 'fl-1',
      terms,
    });
    expect(effects(actions)).toEqual([]);
  });

  it('refuses a flush of another lease, another volume, or with no Active lease', () => {
    const active = activeLease();
    expect(send(active, reserve('fl-1', { lease: { ...terms.lease, providerFence: 2 } })).changed).toBe(
      false,
    );
    expect(send(active, reserve('fl-1', { lease: { ...terms.lease, operationId: 'op-0' } })).changed).toBe(
      false,
    );
    expect(send(active, reserve('fl-1', { volumeId: 'vol-2' })).changed).toBe(false);
    const [start] = initialTransition(environmentMachine, environmentInput);
    expect(send(start, reserve()).changed).toBe(false);
  });

  it('holds one open flush at a time, and never reserves the same flush twice', () => {
    const flushing = send(activeLease(), reserve()).next;
    expect(send(flushing, reserve('fl-2', { transitionRevision: 3 })).changed).toBe(false);
    const flushedOnce = send(flushing, flushed('verified')).next;
    expect(send(flushedOnce, reserve()).changed).toBe(false);
    // After a verified flush a later transition may be flushed again.
    expect(
      send(flushedOnce, reserve('fl-2', { transitionRevision: 3, dataGeneration: 2 })).next.value,
    ).toMatchObject({
      workspace: 'Flushing',
    });
  });

  it('closes a verified flush with the volume transition it authorizes', () => {
    const flushing = send(activeLease(), reserve()).next;
    const { next, actions } = send(flushing, flushed('verified'));
    expect(next.value).toMatchObject({ workspace: 'Flushed', sandbox: 'Active' });
    expect(next.context.flushes['fl-1']?.state).toBe('Verified');
    expect(types(actions)).toEqual(['record.flush']);
    expect(actions.find((a) => a.type === 'record.flush')?.params).toEqual({
      flushOperationId: 'fl-1',
      state: 'Verified',
      deliveries: 1,
      outcome: 'verified',
      evidence: { said: 'verified' },
      receiptSha256: 'e'.repeat(64),
      advance: { volumeId: 'vol-1', fromRevision: 2, fromDataGeneration: 1 },
    });
  });

  it('keeps an uncertain flush open with its evidence; a redelivery is journaled before it runs', () => {
    const flushing = send(activeLease(), reserve()).next;
    const uncertain = send(flushing, flushed('uncertain'));
    expect(uncertain.next.value).toMatchObject({ workspace: 'Flushing' });
    expect(uncertain.next.context.flushes['fl-1']?.state).toBe('Uncertain');
    expect(uncertain.actions.find((a) => a.type === 'record.flush')?.params).toMatchObject({
      state: 'Uncertain',
      evidence: { said: 'uncertain' },
      advance: null,
    });
    const again = send(uncertain.next, { type: 'workspace.flushRedeliver', flushOperationId: 'fl-1' });
    expect(again.next.context.flushes['fl-1']).toMatchObject({ state: 'Uncertain', deliveries: 2 });
    expect(again.actions.find((a) => a.type === 'record.flush')?.params).toMatchObject({ deliveries: 2 });
    expect(send(again.next, flushed('verified')).next.value).toMatchObject({ workspace: 'Flushed' });
  });

  it('closes a refused flush without advancing anything', () => {
    const flushing = send(activeLease(), reserve()).next;
    const { next, actions } = send(flushing, flushed('refused'));
    expect(next.value).toMatchObject({ workspace: 'Steady' });
    expect(actions.find((a) => a.type === 'record.flush')?.params).toMatchObject({
      state: 'Refused',
      advance: null,
    });
  });

  it('never changes a closed flush', () => {
    const verified = send(send(activeLease(), reserve()).next, flushed('verified')).next;
    for (const event of [
      flushed('uncertain'),
      flushed('refused'),
      flushed('verified'),
      { type: 'workspace.flushRedeliver', flushOperationId: 'fl-1' } as const,
    ]) {
      expect(send(verified, event).changed).toBe(false);
    }
  });

  it('verifies nothing once the lease left Active: the outcome may only be kept as uncertain', () => {
    const flushing = send(activeLease(), reserve()).next;
    const fences = { resourceGeneration: 1, providerFence: 1 };
    const abandoned = send(flushing, abandon(fences)).next;
    expect(abandoned.value).toMatchObject({ sandbox: 'Releasing' });
    expect(send(abandoned, flushed('verified')).changed).toBe(false);
    expect(send(abandoned, { type: 'workspace.flushRedeliver', flushOperationId: 'fl-1' }).changed).toBe(
      false,
    );
    const kept = send(abandoned, flushed('uncertain'));
    expect(kept.next.context.flushes['fl-1']?.state).toBe('Uncertain');
  });

  it('is Steady again once a newer lease is reserved: Flushed speaks for the flushed lease only', () => {
    const verified = send(send(activeLease(), reserve()).next, flushed('verified')).next;
    const fences = { resourceGeneration: 1, providerFence: 1 };
    const [released] = transition(environmentMachine, verified, abandon(fences));
    const attempt = effects(transition(environmentMachine, verified, abandon(fences))[1])[0];
    if (attempt === undefined) throw new Error('no release attempt');
    const [gone] = transition(environmentMachine, released, result(attempt, 'succeeded'));
    expect(gone.value).toMatchObject({ sandbox: 'Released', workspace: 'Flushed' });
    const [next] = transition(environmentMachine, gone, provision('op-2'));
    expect(next.value).toMatchObject({ sandbox: 'Provisioning', workspace: 'Steady' });
    expect(next.context.flushes['fl-1']?.state).toBe('Verified');
  });

  it('gives a version 3 snapshot the region with no flushes', () => {
    const migrate = environmentDefinition.migrations[3];
    expect(environmentDefinition.version).toBeGreaterThanOrEqual(4);
    const migrated = migrate?.({
      value: { lifecycle: 'Registered', commands: 'Open' },
      context: { commands: {} },
    });
    expect(migrated).toEqual({
      value: { lifecycle: 'Registered', commands: 'Open', workspace: 'Steady' },
      context: { commands: {}, flushes: {} },
    });
  });
});
