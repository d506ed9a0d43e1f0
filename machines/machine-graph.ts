// A machine's states and transitions read from the machine itself (its state nodes, not a copy of
// its config), in document order, so every diagram drawn from them is deterministic and cannot
// drift from the machine: states by `order`, events in the order the state declares them, the
// candidates of one event in the order they are tried, eventless (`always`) transitions last.
import { and, not, or, stateIn } from 'xstate';
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';

/** One drawn transition: a targetless transition is a self-loop that exits nothing. */
export interface GraphEdge {
  source: AnyStateNode;
  target: AnyStateNode;
  /** The event type, or `always` for an eventless transition. */
  event: string;
  guard: string | null;
  /** Exits and re-enters its target (entry actions run again). */
  reenter: boolean;
  transition: AnyTransitionDefinition;
}

/** Every state node under `node` (itself excluded), parents before children, in document order. */
export function descendantsOf(node: AnyStateNode): AnyStateNode[] {
  return childrenOf(node).flatMap((child) => [child, ...descendantsOf(child)]);
}

export const childrenOf = (node: AnyStateNode): AnyStateNode[] =>
  Object.values(node.states as Record<string, AnyStateNode>).sort((a, b) => a.order - b.order);

/** The transitions declared on `node` itself: its events first, then its eventless ones. */
export const transitionsOf = (node: AnyStateNode): AnyTransitionDefinition[] => [
  ...[...node.transitions.values()].flat(),
  ...(node.always ?? []),
];

export function edgesOf(node: AnyStateNode): GraphEdge[] {
  return transitionsOf(node).flatMap((transition) =>
    (transition.target ?? [node]).map((target) => ({
      source: node,
      target,
      event: transition.eventType === '' ? 'always' : String(transition.eventType),
      guard: transition.guard === undefined ? null : guardLabel(transition.guard),
      reenter: transition.reenter,
      transition,
    })),
  );
}

/** Every edge of the machine, its root's own first. */
export const machineEdges = (machine: AnyStateMachine): GraphEdge[] =>
  [machine.root, ...descendantsOf(machine.root)].flatMap(edgesOf);

// The higher-order guards are recognised by their evaluator, which xstate shares between calls.
const AND = (and([]) as unknown as { check: unknown }).check;
const OR = (or([]) as unknown as { check: unknown }).check;
const NOT = (not('x') as unknown as { check: unknown }).check;
const STATE_IN = (stateIn({}) as unknown as { check: unknown }).check;

type HigherOrder = { check?: unknown; guards?: unknown[]; stateValue?: StateValue; name: string };

/** `leaseMatches`, `currentAttempt(provision)`, `and(a, not(b))`, `stateIn(lifecycle.Registered)`. */
export function guardLabel(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as HigherOrder;
    const inner = () => (g.guards ?? []).map(guardLabel).join(', ');
    if (g.check === AND) return `and(${inner()})`;
    if (g.check === OR) return `or(${inner()})`;
    if (g.check === NOT) return `not(${inner()})`;
    if (g.check === STATE_IN) return `stateIn(${statePathOf(g.stateValue ?? '')})`;
    return g.name || 'inline';
  }
  const { type, params } = guard as { type: string; params?: unknown };
  return params === undefined ? type : `${type}(${paramsLabel(params)})`;
}

function paramsLabel(params: unknown): string {
  if (typeof params === 'function') return '…';
  if (params === null || typeof params !== 'object') return String(params);
  return Object.values(params).map(paramsLabel).join(', ');
}

/** `{ lifecycle: 'Registered' }` → `lifecycle.Registered` (an ID like `#a.b` stays as it is). */
function statePathOf(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : `${key}.${statePathOf(child)}`))
    .join(', ');
}
