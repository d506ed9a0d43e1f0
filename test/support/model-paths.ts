// Breadth-first exploration of the Environment model: every explored step as an edge, and the
// shortest event sequence that reaches each explored state, for failure messages. (`xstate/graph`'s
// getAdjacencyMap does the same walk, but its queue is an array it shifts from: quadratic at the
// quarter of a million steps the model test takes.)
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { ModelState } from './environment-model.ts';

export interface Edge {
  from: ModelState;
  event: EnvironmentEvent;
  to: ModelState;
}

export interface Exploration {
  edges: Edge[];
  /** By serialized state: one of the shortest event sequences from the initial state. */
  paths: Map<string, EnvironmentEvent[]>;
}

export interface Walk {
  initial: ModelState;
  step: (state: ModelState, event: EnvironmentEvent) => ModelState;
  events: (state: ModelState) => EnvironmentEvent[];
  /** States with equal keys are one state: each is expanded once, at its first (shallowest) visit. */
  serialize: (state: ModelState) => string;
  /** Reached but not expanded. */
  stopWhen: (state: ModelState) => boolean;
}

export function exploreModel({ initial, step, events, serialize, stopWhen }: Walk): Exploration {
  const edges: Edge[] = [];
  const paths = new Map<string, EnvironmentEvent[]>();
  const queue: { state: ModelState; path: EnvironmentEvent[] }[] = [{ state: initial, path: [] }];
  for (let next = 0; next < queue.length; next += 1) {
    const { state, path } = queue[next]!;
    const key = serialize(state);
    if (paths.has(key)) continue;
    paths.set(key, path);
    if (stopWhen(state)) continue;
    const proposed = new Set<string>();
    for (const event of events(state)) {
      const eventKey = JSON.stringify(event);
      if (proposed.has(eventKey)) continue;
      proposed.add(eventKey);
      const to = step(state, event);
      edges.push({ from: state, event, to });
      queue.push({ state: to, path: [...path, event] });
    }
  }
  return { edges, paths };
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
