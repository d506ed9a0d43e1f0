// The Environment machine as an outline for the console: each parallel region with its states
// (nested), and the transitions leaving each state, drawn from the state nodes themselves like the
// committed diagrams, so the console's picture of the machine cannot drift from the machine.
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { environmentMachine } from './environment.ts';
import { childrenOf, edgesOf } from './machine-graph.ts';

export interface OutlineEdge {
  event: string;
  guard: string | null;
  /** The target's path below the root, regions included: `sandbox.Provisioning`. */
  target: string;
}

export interface OutlineState {
  key: string;
  /** Dot-separated path below the root (`lifecycle.Active`), as a state value names it. */
  path: string;
  edges: OutlineEdge[];
  states: OutlineState[];
}

export interface MachineOutline {
  id: string;
  regions: OutlineState[];
}

const pathOf = (node: AnyStateNode): string => node.path.join('.');

function outlineOf(node: AnyStateNode): OutlineState {
  return {
    key: node.key,
    path: pathOf(node),
    edges: edgesOf(node).map((edge) => ({
      event: edge.event,
      guard: edge.guard,
      target: pathOf(edge.target),
    })),
    states: childrenOf(node).map(outlineOf),
  };
}

export function machineOutline(machine: AnyStateMachine = environmentMachine): MachineOutline {
  return { id: machine.id, regions: childrenOf(machine.root).map(outlineOf) };
}
