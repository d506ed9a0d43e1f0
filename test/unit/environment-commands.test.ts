// The commands region on the pure machine: a BuildTest operation is reserved only on the current
// Active lease exactly as the caller expects it; each step is an attempt the deciding transition
// opens; an uncertain step stays uncertain and a reconcile opens the same step again (never a new
// operation); a terminal outcome is kept, and only a sealed capture is acknowledged, once.
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { environmentMachine } from '../../machines/environment.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { activeLease, effects } from '../support/active-lease.ts';
import { environmentInput, flushTerms, type EnvironmentSnapshot } from '../support/environment-events.ts';

type Actions = readonly { type: string; params?: unknown }[];

const lease = {
  operationId: 'op-1',
  lifecycleGeneration: 1,
  resourceGeneration: 1,
  providerFence: 1,
  fencingGeneration: 1,
  resourceId: 'pod-op-1',
  ownerHash: 'owner-hash-1',
  workspace: {
    volumeId: 'vol-1',
    resourceGeneration: 1,
    dataGeneration: 1,
    mountPath: '/workspace',
    readOnly: false,
  },
  networkPolicyGeneration: 1,
  providerOptions: {},
};
const hex = (c: string) => c.repeat(64);
const reserve = (overrides: Partial<typeof lease> = {}): EnvironmentEvent => ({
  type: 'command.reserve',
  operationId: 'op-cp-1',
  lease: { ...lease, ...overrides },
  intent: {
    checkpoint: { checkpointId: 'cp-1' },
    acceptedCommand: { version: 2 },
    acceptedCommandHash: hex('a'),
    requestFingerprint: hex('b'),
    expectedBinding: {},
    profileHash: hex('c'),
  },
});
const stepped = (
  attemptId: string,
  step: 'command' | 'collect' | 'cleanup',
  outcome: Extract<EnvironmentEvent, { type: 'command.stepped' }>['outcome'],
): EnvironmentEvent => ({
  type: 'command.stepped',
  operationId: 'op-cp-1',
  attemptId,
  step,
  outcome,
  evidence: {},
});

function send(snapshot: EnvironmentSnapshot, event: EnvironmentEvent) {
  const [next, actions]: [EnvironmentSnapshot, Actions] = transition(environmentMachine, snapshot, event);
  return { next, actions, changed: next !== snapshot };
}

describe('the commands region', () => {
  it('reserves on the current Active lease: the intent record, then the command attempt', () => {
    const { next, actions } = send(activeLease(), reserve());
    expect(actions.map((a) => a.type)).toEqual(
      expect.arrayContaining(['record.commandReserved', 'effect.provider']),
    );
    expect(effects(actions)).toEqual([
      expect.objectContaining({
        attemptId: 'op-cp-1.buildTest.command.1',
        kind: 'buildTest',
        operationId: 'op-cp-1',
        request: expect.objectContaining({
          resourceId: 'pod-op-1',
          buildTest: { operationId: 'op-cp-1', step: 'command', leaseOperationId: 'op-1' },
        }) as unknown,
      }),
    ]);
    expect(next.context.commands['op-cp-1']).toMatchObject({ state: 'Running', step: 'command' });
  });

  it.each([
    ['another lease operation', { operationId: 'op-0' }],
    ['another provider fence', { providerFence: 2 }],
    ['another fencing generation', { fencingGeneration: 2 }],
    ['another Workspace data generation', { workspace: { ...lease.workspace, dataGeneration: 2 } }],
    ['another network policy generation', { networkPolicyGeneration: 2 }],
  ])('refuses a reservation naming %s', (_, overrides) => {
    const active = activeLease();
    expect(send(active, reserve(overrides as Partial<typeof lease>)).changed).toBe(false);
  });

  it('refuses a reservation without an Active lease, and a second one of the same operation', () => {
    const [start] = initialTransition(environmentMachine, environmentInput);
    expect(send(start, reserve()).changed).toBe(false);
    const { next } = send(activeLease(), reserve());
    expect(send(next, reserve()).changed).toBe(false);
  });

  it('runs command then collect in the transitions that decide them, and keeps the outcome', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    const advanced = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'advanced'));
    expect(effects(advanced.actions).map((e) => e.attemptId)).toEqual(['op-cp-1.buildTest.collect.2']);
    s = advanced.next;
    // A late or repeated result of the settled command attempt changes nothing.
    expect(send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'failed')).changed).toBe(false);
    s = send(s, stepped('op-cp-1.buildTest.collect.2', 'collect', 'sealed')).next;
    expect(s.context.commands['op-cp-1']).toMatchObject({ state: 'Succeeded', step: null, attemptId: null });
    // Terminal: a reconcile opens nothing, a stray result changes nothing.
    expect(send(s, { type: 'command.reconcile', operationId: 'op-cp-1' }).changed).toBe(false);
    expect(send(s, stepped('op-cp-1.buildTest.collect.2', 'collect', 'failed')).changed).toBe(false);
  });

  it('an uncertain command stays ReconciliationRequired; reconcile opens the same step again', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    s = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'unknown')).next;
    expect(s.context.commands['op-cp-1']).toMatchObject({ state: 'ReconciliationRequired', step: 'command' });
    const again = send(s, { type: 'command.reconcile', operationId: 'op-cp-1' });
    expect(effects(again.actions).map((e) => [e.attemptId, e.request.buildTest?.step])).toEqual([
      ['op-cp-1.buildTest.command.2', 'command'],
    ]);
    // While that attempt is open, another reconcile opens nothing.
    expect(send(again.next, { type: 'command.reconcile', operationId: 'op-cp-1' }).changed).toBe(false);
  });

  it('acknowledges a sealed capture once, then cleans up and leaves the region', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    s = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'advanced')).next;
    // Not before it is sealed.
    const early = { type: 'command.acknowledged', operationId: 'op-cp-1', acknowledgment: {} } as const;
    expect(send(s, early).changed).toBe(false);
    s = send(s, stepped('op-cp-1.buildTest.collect.2', 'collect', 'sealed')).next;
    const acked = send(s, early);
    expect(effects(acked.actions).map((e) => e.request.buildTest?.step)).toEqual(['cleanup']);
    expect(send(acked.next, early).changed).toBe(false);
    const cleaned = send(acked.next, stepped('op-cp-1.buildTest.cleanup.3', 'cleanup', 'cleaned'));
    expect(cleaned.next.context.commands).toEqual({});
  });

  it('a failed command is terminal and is never acknowledged', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    s = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'failed')).next;
    expect(s.context.commands['op-cp-1']).toMatchObject({ state: 'Failed', step: null });
    const ack = { type: 'command.acknowledged', operationId: 'op-cp-1', acknowledgment: {} } as const;
    expect(send(s, ack).changed).toBe(false);
  });
});

// The commands and workspace regions hold each other's fence: a command may write the Workspace
// until it is terminal, and a flush seals it (Verified: its data moved to the suspend's generation).
describe('BuildTest and the Workspace flush', () => {
  const flushReserve: EnvironmentEvent = {
    type: 'workspace.flushReserve',
    flushOperationId: 'fl-1',
    terms: flushTerms,
  };
  const flushed = (outcome: 'verified' | 'uncertain' | 'refused'): EnvironmentEvent => ({
    type: 'workspace.flushed',
    flushOperationId: 'fl-1',
    outcome,
    evidence: {},
    receiptSha256: outcome === 'verified' ? hex('e') : null,
  });
  const reconcile = { type: 'command.reconcile', operationId: 'op-cp-1' } as const;

  it('reserves no command while a flush is open, or after one verified on this lease', () => {
    const flushing = send(activeLease(), flushReserve).next;
    expect(send(flushing, reserve()).changed).toBe(false);
    // Uncertain: still open, still held.
    const uncertain = send(flushing, flushed('uncertain')).next;
    expect(send(uncertain, reserve()).changed).toBe(false);
    const verified = send(flushing, flushed('verified')).next;
    expect(verified.value).toMatchObject({ workspace: 'Flushed' });
    expect(send(verified, reserve()).changed).toBe(false);
    // A refused flush changed nothing: the Workspace is the lease's again.
    const refused = send(flushing, flushed('refused')).next;
    const reserved = send(refused, reserve());
    expect(effects(reserved.actions).map((e) => e.request.buildTest?.step)).toEqual(['command']);
  });

  it('reserves no flush while a command runs or is uncertain; once it is terminal, it may', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    expect(send(s, flushReserve).changed).toBe(false);
    s = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'unknown')).next;
    expect(s.context.commands['op-cp-1']).toMatchObject({ state: 'ReconciliationRequired' });
    expect(send(s, flushReserve).changed).toBe(false);
    s = send(s, reconcile).next;
    s = send(s, stepped('op-cp-1.buildTest.command.2', 'command', 'advanced')).next;
    expect(send(s, flushReserve).changed).toBe(false);
    s = send(s, stepped('op-cp-1.buildTest.collect.3', 'collect', 'sealed')).next;
    expect(send(s, flushReserve).next.value).toMatchObject({ workspace: 'Flushing' });
  });

  it('after a verified flush, the acknowledged capture is still cleaned up', () => {
    let s: EnvironmentSnapshot = send(activeLease(), reserve()).next;
    s = send(s, stepped('op-cp-1.buildTest.command.1', 'command', 'advanced')).next;
    s = send(s, stepped('op-cp-1.buildTest.collect.2', 'collect', 'sealed')).next;
    s = send(send(s, flushReserve).next, flushed('verified')).next;
    const acked = send(s, { type: 'command.acknowledged', operationId: 'op-cp-1', acknowledgment: {} });
    expect(effects(acked.actions).map((e) => e.request.buildTest?.step)).toEqual(['cleanup']);
    // A cleanup that failed is reopened by a reconcile, Workspace held or not.
    const failed = send(acked.next, stepped('op-cp-1.buildTest.cleanup.3', 'cleanup', 'failed')).next;
    expect(effects(send(failed, reconcile).actions).map((e) => e.request.buildTest?.step)).toEqual([
      'cleanup',
    ]);
  });
});
