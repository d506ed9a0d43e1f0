// The workspace region's guards, context updates and row records as plain functions of (context,
// event). A trusted flush is reserved for the exact volume transition of the current Active lease,
// and every delivery to the Host is journaled before it runs. Only a verified receipt closes it as
// Verified (the record advances the volume's data generation by one, in the same transaction); an
// uncertain delivery keeps its evidence and the flush stays open for the same flush again; a
// refusal closes it without advancing anything. A closed flush never changes.
import { z } from 'zod';
import {
  openFlushStates,
  type EnvironmentContext,
  type FlushItem,
  type FlushState,
} from './environment-context.ts';
import { flushOutcomes, flushTermsSchema, type EnvironmentEvent } from './environment-events.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };

/** The row `workspace.flushReserve` inserts: the terms, once, before the Host is asked. */
export const flushReservedRecordSchema = z.strictObject({
  flushOperationId: z.string(),
  terms: flushTermsSchema,
});
export type FlushReservedRecord = z.infer<typeof flushReservedRecordSchema>;

/** The flush row's new state: the delivery count, and the evidence of the delivery that decided it. */
export const flushRecordSchema = z.strictObject({
  flushOperationId: z.string(),
  state: z.enum(['Reserved', 'Uncertain', 'Verified', 'Refused']),
  deliveries: z.number().int().positive(),
  outcome: z.enum(flushOutcomes).nullable(),
  evidence: z.record(z.string(), z.unknown()).nullable(),
  receiptSha256: z.string().nullable(),
  /** Verified only: the volume transition to make, compare-and-set on the reserved terms. */
  advance: z
    .strictObject({
      volumeId: z.string(),
      fromRevision: z.number().int(),
      fromDataGeneration: z.number().int(),
    })
    .nullable(),
});
export type FlushRecord = z.infer<typeof flushRecordSchema>;

const itemOf = ({ context, event }: Args): FlushItem | undefined =>
  'flushOperationId' in event ? context.flushes[event.flushOperationId] : undefined;

/** The flush names the current lease exactly, and the volume that lease mounts. */
export function flushOnCurrentLease({ context, event }: Args): boolean {
  if (event.type !== 'workspace.flushReserve') return false;
  const lease = context.sandbox.lease;
  const want = event.terms;
  return (
    lease !== null &&
    lease.operationId === want.lease.operationId &&
    lease.resourceGeneration === want.lease.resourceGeneration &&
    lease.providerFence === want.lease.providerFence &&
    lease.workspace.volumeId === want.volumeId
  );
}

export const newFlush = ({ context, event }: Args): boolean =>
  event.type === 'workspace.flushReserve' && !(event.flushOperationId in context.flushes);

/** The open flush's lease is still the current lease, exactly (the region checks it is Active). */
export function flushLeaseCurrent(args: Args): boolean {
  const item = itemOf(args);
  const lease = args.context.sandbox.lease;
  return (
    item !== undefined &&
    lease !== null &&
    lease.operationId === item.terms.lease.operationId &&
    lease.resourceGeneration === item.terms.lease.resourceGeneration &&
    lease.providerFence === item.terms.lease.providerFence
  );
}

/** The event is for an open flush (Reserved, or Uncertain after a delivery that did not settle). */
export function flushOpen(args: Args): boolean {
  const item = itemOf(args);
  return item !== undefined && openFlushStates.includes(item.state);
}

export const flushVerified = ({ event }: Args): boolean =>
  event.type === 'workspace.flushed' && event.outcome === 'verified';

export const flushUncertain = ({ event }: Args): boolean =>
  event.type === 'workspace.flushed' && event.outcome === 'uncertain';

export const flushRefused = ({ event }: Args): boolean =>
  event.type === 'workspace.flushed' && event.outcome === 'refused';

export function reserveFlush({ context, event }: Args): EnvironmentContext['flushes'] {
  if (event.type !== 'workspace.flushReserve') return context.flushes;
  // The reservation is the first delivery's journal entry.
  const item: FlushItem = { state: 'Reserved', terms: event.terms, deliveries: 1 };
  return { ...context.flushes, [event.flushOperationId]: item };
}

export function redeliverFlush(args: Args): EnvironmentContext['flushes'] {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'workspace.flushRedeliver') return context.flushes;
  return { ...context.flushes, [event.flushOperationId]: { ...item, deliveries: item.deliveries + 1 } };
}

const stateAfter: Record<(typeof flushOutcomes)[number], FlushState> = {
  verified: 'Verified',
  uncertain: 'Uncertain',
  refused: 'Refused',
};

export function settleFlush(args: Args): EnvironmentContext['flushes'] {
  const item = itemOf(args);
  const { context, event } = args;
  if (item === undefined || event.type !== 'workspace.flushed') return context.flushes;
  return { ...context.flushes, [event.flushOperationId]: { ...item, state: stateAfter[event.outcome] } };
}

export function flushReservationOf(event: EnvironmentEvent): FlushReservedRecord {
  if (event.type !== 'workspace.flushReserve') throw new Error('not workspace.flushReserve');
  return { flushOperationId: event.flushOperationId, terms: event.terms };
}

/** The flush row after the transition (its context item already updated). */
export function flushRecordOf(context: EnvironmentContext, event: EnvironmentEvent): FlushRecord {
  if (!('flushOperationId' in event)) throw new Error('not a workspace event');
  const item = context.flushes[event.flushOperationId];
  if (item === undefined) throw new Error(`no flush ${event.flushOperationId}`);
  const settled = event.type === 'workspace.flushed' ? event : null;
  return {
    flushOperationId: event.flushOperationId,
    state: item.state,
    deliveries: item.deliveries,
    outcome: settled?.outcome ?? null,
    evidence: settled?.evidence ?? null,
    receiptSha256: settled?.receiptSha256 ?? null,
    advance:
      settled?.outcome === 'verified'
        ? {
            volumeId: item.terms.volumeId,
            fromRevision: item.terms.transitionRevision,
            fromDataGeneration: item.terms.dataGeneration,
          }
        : null,
  };
}

/**
 * The lease the region's Flushed state speaks for is gone: a newer lease was reserved (a resume,
 * or any provision after the suspend). Its Workspace was not flushed, so the region is Steady.
 */
export const flushedLeaseReplaced = ({ context }: Pick<Args, 'context'>): boolean => {
  const lease = context.sandbox.lease;
  const verified = Object.values(context.flushes).filter((item) => item.state === 'Verified');
  return (
    lease !== null &&
    verified.length > 0 &&
    verified.every((item) => item.terms.lease.operationId !== lease.operationId)
  );
};

/** Any flush still open: the region is Flushing while one is. */
export const anyFlushOpen = ({ context }: Pick<Args, 'context'>): boolean =>
  Object.values(context.flushes).some((item) => openFlushStates.includes(item.state));

/**
 * The current lease's Workspace is held by a flush: one is open (the Host is sealing it), or one
 * verified on this lease (its data moved to the suspend's generation). No BuildTest command is
 * reserved or stepped on it then.
 */
export const workspaceHeldByFlush = ({ context }: Pick<Args, 'context'>): boolean => {
  const lease = context.sandbox.lease;
  return Object.values(context.flushes).some(
    (item) =>
      openFlushStates.includes(item.state) ||
      (item.state === 'Verified' && lease !== null && item.terms.lease.operationId === lease.operationId),
  );
};
