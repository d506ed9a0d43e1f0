// The commands region's guards, context updates, effects and row records as plain functions of
// (context, event). A BuildTest operation runs on the exact lease it was reserved on, one step at a
// time (command, then collect; cleanup after a verified acknowledgment), each step a provider
// attempt opened by the transition that decides it. A terminal operation keeps its outcome: later
// events may only add the acknowledgment and clean up.
import { z } from 'zod';
import {
  commandIntentSchema,
  commandOutcomes,
  commandSteps,
  type CommandOutcome,
  type CommandStep,
} from './environment-events.ts';
import {
  terminalCommandStates,
  type CommandItem,
  type CommandState,
  type EnvironmentContext,
} from './environment-context.ts';

export { terminalCommandStates, type CommandItem, type CommandState };
import type { ProviderEffect } from './environment-effects.ts';
import type { EnvironmentEvent } from './environment-events.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };

/** The record the transition writes to `build_test_operations`. */
export const commandStateRecordSchema = z.strictObject({
  operationId: z.string(),
  /** Null once the operation left the region (cleaned): its row keeps its outcome. */
  state: z.enum(['Running', 'ReconciliationRequired', 'Succeeded', 'Failed', 'Interrupted']).nullable(),
  step: z.enum(commandSteps).nullable(),
  outcome: z.enum(commandOutcomes).nullable(),
  evidence: z.record(z.string(), z.unknown()),
});
export type CommandStateRecord = z.infer<typeof commandStateRecordSchema>;

/** The row `command.reserve` inserts: the intent, once, before any provider effect. */
export const commandReservedRecordSchema = commandIntentSchema.extend({
  operationId: z.string(),
  leaseOperationId: z.string(),
});
export type CommandReservedRecord = z.infer<typeof commandReservedRecordSchema>;

export function reservationOf(event: EnvironmentEvent): CommandReservedRecord {
  if (event.type !== 'command.reserve') throw new Error('not command.reserve');
  return { ...event.intent, operationId: event.operationId, leaseOperationId: event.lease.operationId };
}

export const advanced = (event: EnvironmentEvent): boolean =>
  event.type === 'command.stepped' && event.outcome === 'advanced';

const itemOf = ({ context, event }: Args): CommandItem | undefined =>
  'operationId' in event ? context.commands[event.operationId] : undefined;

/** The event's lease is the current, Active lease, exactly (fences, volume, network policy). */
export function onCurrentLease({ context, event }: Args): boolean {
  if (event.type !== 'command.reserve') return false;
  const lease = context.sandbox.lease;
  const want = event.lease;
  return (
    lease !== null &&
    lease.operationId === want.operationId &&
    lease.resourceGeneration === want.resourceGeneration &&
    lease.providerFence === want.providerFence &&
    lease.currentFencingGeneration === want.fencingGeneration &&
    lease.resource?.resourceId === want.resourceId &&
    lease.workspace.volumeId === want.workspace.volumeId &&
    lease.workspace.resourceGeneration === want.workspace.resourceGeneration &&
    lease.workspace.dataGeneration === want.workspace.dataGeneration &&
    lease.networkPolicyGeneration === want.networkPolicyGeneration
  );
}

export const newCommand = ({ context, event }: Args): boolean =>
  event.type === 'command.reserve' && !(event.operationId in context.commands);

/** The result is for the operation's open attempt and step. */
export function stepCurrent(args: Args): boolean {
  const item = itemOf(args);
  const { event } = args;
  return (
    item !== undefined &&
    event.type === 'command.stepped' &&
    item.attemptId === event.attemptId &&
    item.step === event.step
  );
}

/** Nothing is open and something is left to do: the same step again (never a new operation). */
export function reconcilable(args: Args): boolean {
  const item = itemOf(args);
  return (
    item !== undefined &&
    args.event.type === 'command.reconcile' &&
    item.attemptId === null &&
    item.step !== null
  );
}

/** The reconcile reopens the operation's cleanup: deleting its Pods touches no Workspace. */
export function reconcilesCleanup(args: Args): boolean {
  return itemOf(args)?.step === 'cleanup';
}

/** Some operation is not terminal yet: its command may still write the Workspace. */
export const anyCommandRunning = ({ context }: Pick<Args, 'context'>): boolean =>
  Object.values(context.commands).some((item) => !terminalCommandStates.includes(item.state));

/** Only a sealed version 2 capture is acknowledged, once. */
export function acknowledgeable(args: Args): boolean {
  const item = itemOf(args);
  return (
    item !== undefined &&
    args.event.type === 'command.acknowledged' &&
    item.state === 'Succeeded' &&
    !item.acknowledged
  );
}

const attemptIdOf = (operationId: string, step: CommandStep, seq: number) =>
  `${operationId}.buildTest.${step}.${seq}`;

function opened(operationId: string, item: CommandItem, step: CommandStep): CommandItem {
  const attempts = item.attempts + 1;
  return { ...item, step, attempts, attemptId: attemptIdOf(operationId, step, attempts) };
}

/** What an attempt's outcome makes of the operation. */
function afterOutcome(item: CommandItem, step: CommandStep, outcome: CommandOutcome): CommandItem {
  const closed = { ...item, attemptId: null };
  switch (outcome) {
    case 'advanced':
      return { ...closed, state: 'Running', step: 'collect' };
    case 'sealed':
      return { ...closed, state: 'Succeeded', step: null };
    case 'failed':
      // A cleanup that failed is tried again by a reconcile; the operation's outcome stays.
      return step === 'cleanup' ? closed : { ...closed, state: 'Failed', step: null };
    case 'interrupted':
      return { ...closed, state: 'Interrupted', step: null };
    case 'running':
      return closed;
    case 'unknown':
      // An uncertain create stays uncertain: it authorizes no other Pod, only another look.
      return step === 'cleanup' ? closed : { ...closed, state: 'ReconciliationRequired' };
    case 'cleaned':
      return { ...closed, step: null };
  }
}

export function reserveCommand({ context, event }: Args): EnvironmentContext['commands'] {
  if (event.type !== 'command.reserve') return context.commands;
  const item: CommandItem = {
    state: 'Running',
    step: 'command',
    attemptId: null,
    attempts: 0,
    acknowledged: false,
    lease: event.lease,
  };
  return { ...context.commands, [event.operationId]: opened(event.operationId, item, 'command') };
}

export function stepCommand(args: Args): EnvironmentContext['commands'] {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'command.stepped') return context.commands;
  if (event.outcome === 'cleaned') {
    return Object.fromEntries(Object.entries(context.commands).filter(([id]) => id !== event.operationId));
  }
  let next = afterOutcome(item, event.step, event.outcome);
  if (event.outcome === 'advanced') next = opened(event.operationId, next, 'collect');
  return { ...context.commands, [event.operationId]: next };
}

export function reopenCommand(args: Args): EnvironmentContext['commands'] {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'command.reconcile' || item.step === null) return context.commands;
  const state = item.state === 'ReconciliationRequired' ? 'Running' : item.state;
  return {
    ...context.commands,
    [event.operationId]: opened(event.operationId, { ...item, state }, item.step),
  };
}

export function acknowledgeCommand(args: Args): EnvironmentContext['commands'] {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'command.acknowledged') return context.commands;
  const next = opened(event.operationId, { ...item, acknowledged: true }, 'cleanup');
  return { ...context.commands, [event.operationId]: next };
}

/** The attempt the transition just opened for the event's operation, as a provider effect. */
export function commandEffectOf(context: EnvironmentContext, event: EnvironmentEvent): ProviderEffect {
  if (!('operationId' in event)) throw new Error('not a command event');
  const item = context.commands[event.operationId];
  if (item?.attemptId == null || item.step === null) throw new Error('no open command attempt');
  const { lease } = item;
  return {
    attemptId: item.attemptId,
    kind: 'buildTest',
    operationId: event.operationId,
    fences: {
      lifecycleGeneration: lease.lifecycleGeneration,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      fencingGeneration: lease.fencingGeneration,
    },
    request: {
      ownerHash: lease.ownerHash,
      workspace: lease.workspace,
      networkPolicyGeneration: lease.networkPolicyGeneration,
      providerOptions: lease.providerOptions,
      resourceId: lease.resourceId,
      releaseIdempotencyKey: null,
      buildTest: { operationId: event.operationId, step: item.step, leaseOperationId: lease.operationId },
    },
  };
}

/** The operation row's new state, with the evidence of the step that got it there. */
export function commandRecordOf(context: EnvironmentContext, event: EnvironmentEvent): CommandStateRecord {
  if (!('operationId' in event)) throw new Error('not a command event');
  const item = context.commands[event.operationId];
  return {
    operationId: event.operationId,
    state: item?.state ?? null,
    step: item?.step ?? null,
    outcome: event.type === 'command.stepped' ? event.outcome : null,
    evidence: event.type === 'command.stepped' ? event.evidence : {},
  };
}
