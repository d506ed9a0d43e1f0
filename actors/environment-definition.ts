import type { AnyMachineSnapshot } from 'xstate';
import { environmentMachine } from '../machines/environment.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { EnvironmentContext } from '../machines/environment-context.ts';
import type { ActorDefinition } from './definition.ts';
import { applyEnvironmentActions } from './environment-records.ts';

export const environmentDefinition: ActorDefinition<EnvironmentEvent> = {
  machine: environmentMachine,
  version: 4,
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
  },
  project(snapshot: AnyMachineSnapshot) {
    const value = snapshot.value as { lifecycle: string };
    const context = snapshot.context as EnvironmentContext;
    return { lifecycleState: value.lifecycle, lifecycleGeneration: context.lifecycleGeneration };
  },
  applyActions: applyEnvironmentActions,
  fences(event) {
    return event.type === 'environment.release'
      ? { lifecycleGeneration: event.expectedLifecycleGeneration }
      : {};
  },
};
