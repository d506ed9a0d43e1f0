import type { AnyMachineSnapshot } from 'xstate';
import { environmentMachine } from '../machines/environment.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { EnvironmentContext } from '../machines/environment-context.ts';
import type { ActorDefinition } from './definition.ts';
import { applyEnvironmentActions } from './environment-records.ts';

export const environmentDefinition: ActorDefinition<EnvironmentEvent> = {
  machine: environmentMachine,
  version: 5,
  migrations: {
    // Version 2 adds the cleanup region (late resources): nothing to clean up in older snapshots.
    1: (persisted) => {
      const snapshot = persisted as { value: Record<string, unknown>; context: Record<string, unknown> };
      return {
        ...snapshot,
        value: { ...snapshot.value, cleanup: 'Clean' },
        context: { ...snapshot.context, cleanups: {} },
      };
    },
    // Version 3 adds the commands region (BuildTest operations): none in older snapshots.
    2: (persisted) => {
      const snapshot = persisted as { value: Record<string, unknown>; context: Record<string, unknown> };
      return {
        ...snapshot,
        value: { ...snapshot.value, commands: 'Open' },
        context: { ...snapshot.context, commands: {} },
      };
    },
    // Version 4 adds the workspace region (trusted Workspace flushes): none in older snapshots.
    3: (persisted) => {
      const snapshot = persisted as { value: Record<string, unknown>; context: Record<string, unknown> };
      return {
        ...snapshot,
        value: { ...snapshot.value, workspace: 'Steady' },
        context: { ...snapshot.context, flushes: {} },
      };
    },
    // Version 5 records lifecycle generation advances by operation key: none in older snapshots.
    4: (persisted) => {
      const snapshot = persisted as { value: Record<string, unknown>; context: Record<string, unknown> };
      return { ...snapshot, context: { ...snapshot.context, advances: {} } };
    },
  },
  project(snapshot: AnyMachineSnapshot) {
    const value = snapshot.value as { lifecycle: string; sandbox: string };
    const context = snapshot.context as EnvironmentContext;
    const lease = context.sandbox.lease;
    return {
      lifecycleState: value.lifecycle,
      lifecycleGeneration: context.lifecycleGeneration,
      listing: {
        sandboxState: value.sandbox,
        leaseExpiresAt: lease?.expiresAt ?? null,
        // What keeps a release from going ahead: the lifecycle service's ReleaseBlockedError.
        unresolvedAttempts:
          Object.keys(context.sandbox.unresolved).length + (lease?.reconcileAttemptId == null ? 0 : 1),
        openCleanups: Object.keys(context.cleanups).length,
      },
    };
  },
  applyActions: applyEnvironmentActions,
  fences(event) {
    return event.type === 'environment.release' || event.type === 'environment.advance'
      ? { lifecycleGeneration: event.expectedLifecycleGeneration }
      : {};
  },
};
