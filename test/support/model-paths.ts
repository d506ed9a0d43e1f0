// Turns an `xstate/graph` adjacency map into something a failing assertion can print: the explored
// steps as edges, and the shortest event sequence that reaches each explored state.
import { adjacencyMapToArray, type AdjacencyMap } from 'xstate/graph';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { ModelState } from './environment-model.ts';

type ModelSnapshot = { context: ModelState };
export interface Edge {
  from: ModelState;
  event: EnvironmentEvent;
  to: ModelState;
}

export function edgesOf(adjacency: AdjacencyMap<ModelSnapshot, EnvironmentEvent>): Edge[] {
  return adjacencyMapToArray(adjacency).map(({ state, event, nextState }) => ({
    from: state.context,
    event,
    to: nextState.context,
  }));
}

/** Breadth-first from the initial state, so each state gets one of its shortest paths. */
export function shortestPaths(
  adjacency: AdjacencyMap<ModelSnapshot, EnvironmentEvent>,
  serialize: (state: ModelState) => string,
): Map<string, EnvironmentEvent[]> {
  const [initial] = Object.keys(adjacency);
  const paths = new Map<string, EnvironmentEvent[]>();
  if (initial === undefined) return paths;
  paths.set(initial, []);
  const queue = [initial];
  for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
    const path = paths.get(key) ?? [];
    for (const { event, state } of Object.values(
      adjacency[key as keyof typeof adjacency]?.transitions ?? {},
    )) {
      const next = serialize(state.context);
      if (paths.has(next)) continue;
      paths.set(next, [...path, event]);
      queue.push(next);
    }
  }
  return paths;
}

const briefFields = [
  'attemptId',
  'operationId',
  'expectedLifecycleGeneration',
  'resourceGeneration',
  'providerFence',
  'fencingGeneration',
  'finished',
] as const;

/** `type{fields}` with only the fields that tell events apart, for failure messages. */
export function describeEvent(event: EnvironmentEvent): string {
  const brief: Record<string, unknown> = {};
  for (const field of briefFields) if (field in event) brief[field] = event[field as keyof typeof event];
  if (event.type === 'provider.succeeded' && event.resources !== null) {
    brief['found'] = event.resources.map((r) => r.operationId);
  }
  return `${event.type}${JSON.stringify(brief)}`;
}
