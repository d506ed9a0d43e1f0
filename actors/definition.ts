// What the runtime needs to know about a machine to persist it: its version, the migrations that
// bring older snapshots forward, the columns projected from a snapshot, and the fences an event
// carries. The Environment is the production definition; tests plug in others.
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow, ListingProjection } from '../store/environments.ts';

export interface Projection {
  lifecycleState: string;
  lifecycleGeneration: number;
  /** What an operator's list filters on; a machine without one lists with none. */
  listing?: ListingProjection;
}

/** Fences an event carries, compared with the stored row before the machine sees the event. */
export interface EventFences {
  lifecycleGeneration?: number;
}

export interface ActorDefinition<TEvent extends { type: string } = { type: string }> {
  machine: AnyStateMachine;
  /** Bump when a snapshot written by the previous version would not restore as-is. */
  version: number;
  /** migrations[n] turns a version-n persisted snapshot into a version-(n+1) one. */
  migrations: Readonly<Record<number, (snapshot: unknown) => unknown>>;
  project(snapshot: AnyMachineSnapshot): Projection;
  fences(event: TEvent): EventFences;
  /**
   * Performs the transition's `record.*` actions (derived rows: leases, attempts, attachments) and
   * prepares its `effect.*` ones (their attempt rows) inside the transition's transaction, before
   * the outbox rows. Gets them all at once, in order, so a row named twice is written once.
   * Throwing rolls the whole transition back. Returns what the writer found that the process
   * should report once the transition commits (`TransitionNote`), if anything.
   */
  applyActions?(
    tx: Queryable,
    row: EnvironmentRow,
    actions: readonly DeclaredAction[],
    event: TEvent | InitEvent,
  ): Promise<readonly TransitionNote[] | void>;
}

/**
 * Something a transition's writer found in the rows it wrote (a Workspace conflict), reported to
 * commit listeners only after the commit, so a rolled-back transition reports nothing.
 */
export interface TransitionNote {
  kind: string;
  detail: Record<string, unknown>;
}

export interface DeclaredAction {
  type: string;
  params: unknown;
}

export interface InitEvent {
  type: 'xstate.init';
}
