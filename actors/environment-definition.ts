import type { AnyMachineSnapshot } from 'xstate';
import { environmentMachine } from '../machines/environment.ts';
import type { EnvironmentContext, EnvironmentEvent } from '../machines/environment-events.ts';
import type { ActorDefinition } from './definition.ts';

export const environmentDefinition: ActorDefinition<EnvironmentEvent> = {
  machine: environmentMachine,
  version: 1,
  migrations: {},
  project(snapshot: AnyMachineSnapshot) {
    const value = snapshot.value as { lifecycle: string };
    const context = snapshot.context as EnvironmentContext;
    return { lifecycleState: value.lifecycle, lifecycleGeneration: context.lifecycleGeneration };
  },
  fences(event) {
    switch (event.type) {
      case 'environment.release':
        return { lifecycleGeneration: event.expectedLifecycleGeneration };
    }
  },
};
