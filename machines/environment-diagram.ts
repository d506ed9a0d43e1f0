// The Environment machine as a diagram, drawn from the machine itself (never by hand): JSON for the
// Stately editor and inspector, Mermaid (stateDiagram-v2, one composite state per parallel region)
// and Graphviz DOT (one cluster per region). Output is deterministic, so the diagrams committed in
// README.md and docs/architecture.md can be regenerated (`scripts/diagrams.ts`) and compared.
//
// A transition declared on a region itself (it applies whichever state the region is in) starts
// from a dashed pseudo-state "(any <region> state)"; a targetless one is a self-loop. Edges read
// `event [guard]`, `always [guard]` for an eventless transition, and end in `(reenter)` when a
// self-transition exits and re-enters its state (its entry actions run again).
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { environmentMachine } from './environment.ts';
import { childrenOf, descendantsOf, machineEdges, transitionsOf, type GraphEdge } from './machine-graph.ts';
import { machineConfigJson } from './machine-json.ts';

export const diagramFormats = ['json', 'mermaid', 'dot'] as const;
export type DiagramFormat = (typeof diagramFormats)[number];

export function exportMachine(format: DiagramFormat): string {
  if (format === 'json') return `${JSON.stringify(machineConfigJson(environmentMachine), null, 2)}\n`;
  if (format === 'dot') return dotOf(environmentMachine);
  return mermaidOf(environmentMachine);
}

/** One region on its own, for the document section that explains it. */
export function regionMermaid(region: string): string {
  const node = childrenOf(environmentMachine.root).find((r) => r.key === region);
  if (node === undefined) throw new Error(`no region ${region} in ${environmentMachine.id}`);
  return mermaidOf(environmentMachine, node);
}

function edgeLabel(edge: GraphEdge): string {
  const guard = edge.guard === null ? '' : ` [${edge.guard}]`;
  const reenter = edge.reenter && edge.target === edge.source ? ' (reenter)' : '';
  return `${edge.event}${guard}${reenter}`;
}

/** Whether `node` has transitions of its own drawn from an "(any … state)" pseudo-state. */
const hasAnyState = (node: AnyStateNode) => node.type !== 'atomic' && transitionsOf(node).length > 0;

// ---- Mermaid -------------------------------------------------------------------------------------

/** Mermaid IDs are global to a diagram (`Releasing` is in two regions), so they carry the path. */
const mermaidId = (node: AnyStateNode): string =>
  node.path.length === 0 ? node.machine.id : node.path.join('_').replace(/[^A-Za-z0-9_]/g, '_');

/** The end of an edge as drawn: a composite state's own transitions leave its pseudo-state. */
function mermaidEnd(node: AnyStateNode, edge: GraphEdge): string {
  if (node === edge.source && hasAnyState(node)) return `${mermaidId(node)}_any`;
  return mermaidId(node);
}

/** The composite whose block declares what lies directly in `node`; a parallel state's block is
 * split by `--` into its regions, so what lies directly in it is declared around it. */
function blockOf(node: AnyStateNode | undefined): AnyStateNode | undefined {
  let block = node;
  while (block !== undefined && block.type !== 'compound' && block.parent !== undefined) block = block.parent;
  return block?.type === 'compound' ? block : undefined;
}

/** Where a composite's pseudo-state is declared: in its own block, or around a parallel state. */
const anyBlockOf = (node: AnyStateNode) => (node.type === 'compound' ? node : blockOf(node.parent));

const endBlock = (node: AnyStateNode, edge: GraphEdge) =>
  node === edge.source && hasAnyState(node) ? anyBlockOf(node) : blockOf(node.parent);

/** An edge is declared in the innermost block that holds both of its ends (`undefined`: the top). */
function ownerOf(edge: GraphEdge): AnyStateNode | undefined {
  const outwards = (from: AnyStateNode | undefined) => {
    const chain: AnyStateNode[] = [];
    for (let b = from; b !== undefined; b = blockOf(b.parent)) chain.push(b);
    return chain;
  };
  const fromSource = outwards(endBlock(edge.source, edge));
  return outwards(endBlock(edge.target, edge)).find((b) => fromSource.includes(b));
}

/** The whole machine, or one region on its own (its body at the top level). */
function mermaidOf(machine: AnyStateMachine, only?: AnyStateNode): string {
  const scope = only === undefined ? undefined : new Set([only, ...descendantsOf(only)]);
  const edges = machineEdges(machine).filter((e) => scope === undefined || scope.has(e.source));
  const nodes = [machine.root, ...descendantsOf(machine.root)];
  const body =
    only !== undefined
      ? mermaidBody(only, nodes, edges, '  ')
      : [
          ...mermaidState(machine.root, nodes, edges, '  '),
          ...declaredIn(undefined, nodes, edges).map((line) => `  ${line}`),
        ];
  return `${['stateDiagram-v2', ...body].join('\n')}\n`;
}

/** The pseudo-states and edges a block declares after its states. */
function declaredIn(block: AnyStateNode | undefined, nodes: AnyStateNode[], edges: GraphEdge[]): string[] {
  const any = nodes.filter((n) => hasAnyState(n) && anyBlockOf(n) === block).map(anyDeclaration);
  return [...any, ...mermaidEdges(edges.filter((e) => ownerOf(e) === block))];
}

/**
 * Mermaid draws one edge per pair of states (a later edge between the same two replaces an earlier
 * one), so the transitions between two states share one edge, a label line each, in machine order.
 */
function mermaidEdges(edges: GraphEdge[]): string[] {
  const pairs = new Map<string, string[]>();
  for (const edge of edges) {
    const pair = `${mermaidEnd(edge.source, edge)} --> ${mermaidEnd(edge.target, edge)}`;
    pairs.set(pair, [...(pairs.get(pair) ?? []), mermaidLabel(edge)]);
  }
  return [...pairs].map(([pair, labels]) => `${pair}: ${labels.join(MERMAID_BREAK)}`);
}

/** Between the label lines of one Mermaid edge. */
export const MERMAID_BREAK = '<br>';

/** `;` ends a Mermaid statement and `#` starts an entity code: neither may reach a label. */
const mermaidLabel = (edge: GraphEdge) => edgeLabel(edge).replace(/[;#]/g, ' ');

function mermaidState(node: AnyStateNode, nodes: AnyStateNode[], edges: GraphEdge[], indent: string) {
  const id = mermaidId(node);
  const head = id === node.key ? `state ${id}` : `state "${node.key}" as ${id}`;
  if (node.type === 'atomic' || node.type === 'final') return [`${indent}${head}`];
  return [`${indent}${head} {`, ...mermaidBody(node, nodes, edges, `${indent}  `), `${indent}}`];
}

function mermaidBody(
  node: AnyStateNode,
  nodes: AnyStateNode[],
  edges: GraphEdge[],
  indent: string,
): string[] {
  const children = childrenOf(node);
  if (node.type === 'parallel')
    return children.flatMap((child, i) => [
      ...(i === 0 ? [] : [`${indent}--`]),
      ...mermaidState(child, nodes, edges, indent),
    ]);
  return [
    ...node.initial.target.map((t) => `${indent}[*] --> ${mermaidId(t)}`),
    ...children.flatMap((child) => mermaidState(child, nodes, edges, indent)),
    ...declaredIn(node, nodes, edges).map((line) => `${indent}${line}`),
  ];
}

const anyDeclaration = (node: AnyStateNode) =>
  `state "(any ${node.key || node.machine.id} state)" as ${mermaidId(node)}_any`;

// ---- DOT -----------------------------------------------------------------------------------------

const quote = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** A node's DOT ID; a compound state is a cluster, entered through its initial point. */
function dotEnd(node: AnyStateNode, edge: GraphEdge): string {
  if (node === edge.source && hasAnyState(node)) return quote(`${node.id}.(any)`);
  return quote(node.type === 'atomic' || node.type === 'final' ? node.id : `${node.id}.[*]`);
}

function dotOf(machine: AnyStateMachine): string {
  const lines = [
    `digraph ${quote(machine.id)} {`,
    '  compound=true;',
    '  rankdir=LR;',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
    ...dotCluster(machine.root, '  '),
    ...initialEdges(machine).map((edge) => `  ${edge}`),
    ...machineEdges(machine).map((edge) => `  ${dotEdge(edge)}`),
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

function dotCluster(node: AnyStateNode, indent: string): string[] {
  const inner = `${indent}  `;
  const label = node.path.length === 0 ? `${node.machine.id} (${node.type})` : node.key;
  const start =
    node.type === 'compound' ? [`${inner}${quote(`${node.id}.[*]`)} [shape=point, label=""];`] : [];
  const any = hasAnyState(node)
    ? [`${inner}${quote(`${node.id}.(any)`)} [label=${quote(`(any ${label} state)`)}, style=dashed];`]
    : [];
  const children = childrenOf(node).flatMap((child) =>
    child.type === 'atomic' || child.type === 'final'
      ? [`${inner}${quote(child.id)} [label=${quote(child.key)}];`]
      : dotCluster(child, inner),
  );
  return [
    `${indent}subgraph ${quote(`cluster_${node.id}`)} {`,
    `${inner}label=${quote(label)};`,
    ...start,
    ...children,
    ...any,
    `${indent}}`,
  ];
}

function dotEdge(edge: GraphEdge): string {
  const { source, target } = edge;
  const intoCluster = target !== source && target.type !== 'atomic' && target.type !== 'final';
  const attributes = [`label=${quote(edgeLabel(edge))}`];
  if (intoCluster) attributes.push(`lhead=${quote(`cluster_${target.id}`)}`);
  return `${dotEnd(source, edge)} -> ${dotEnd(target, edge)} [${attributes.join(', ')}];`;
}

/** Initial transitions, drawn from each compound state's start point. */
const initialEdges = (machine: AnyStateMachine): string[] =>
  [machine.root, ...descendantsOf(machine.root)]
    .filter((node) => node.type === 'compound')
    .flatMap((node) => node.initial.target.map((t) => `${quote(`${node.id}.[*]`)} -> ${quote(t.id)};`));
