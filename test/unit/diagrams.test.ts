// The state diagrams are the machine: README.md and docs/architecture.md hold exactly what the
// generator draws from it now (`npm run diagrams` rewrites them), every transition of the machine is
// an edge in the Mermaid and DOT exports, and the JSON export rebuilds the same machine. The list
// of transitions is read from the machine's state nodes here, independently of the exporter.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { and, createMachine, not, or, stateIn, type AnyStateMachine, type AnyStateNode } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import { environmentMachine } from '../../machines/environment.ts';
import { exportMachine, MERMAID_BREAK } from '../../machines/environment-diagram.ts';
import { guardLabel } from '../../machines/machine-graph.ts';
import { blockNames, documents, refresh } from '../../scripts/diagram-blocks.ts';

const read = (document: string) => readFileSync(new URL(`../../${document}`, import.meta.url), 'utf8');

interface Transition {
  source: AnyStateNode;
  target: AnyStateNode;
  label: string;
}

/** Every transition of `machine` once per target, a targetless one as a self-loop. */
function transitionsOf(machine: AnyStateMachine): Transition[] {
  return [machine.root, ...getStateNodes(machine.root)].flatMap((node) =>
    [...[...node.transitions.values()].flat(), ...(node.always ?? [])].flatMap((t) =>
      (t.target ?? [node]).map((target) => {
        const event = t.eventType === '' ? 'always' : String(t.eventType);
        const guard = t.guard === undefined ? '' : ` [${guardLabel(t.guard)}]`;
        const reenter = t.reenter && target === node ? ' (reenter)' : '';
        return { source: node, target, label: `${event}${guard}${reenter}` };
      }),
    ),
  );
}

const transitions = transitionsOf(environmentMachine);
const allStateIds = getStateNodes(environmentMachine.root).map((n) => n.id);

/** A region's own transitions leave its "(any … state)" pseudo-state. */
const ownEdge = (node: AnyStateNode, t: Transition) => node === t.source && node.type !== 'atomic';

describe('committed diagrams', () => {
  it.each(Object.entries(documents))('%s holds the diagrams the machine draws now', (document, blocks) => {
    const text = read(document);
    expect(blockNames(text)).toEqual(blocks);
    // If this fails: run `npm run diagrams` and commit the result.
    expect(refresh(document, text)).toBe(text);
  });

  it('README shows exactly what `machines export --format mermaid` prints', () => {
    expect(read('README.md')).toContain(`\`\`\`mermaid\n${exportMachine('mermaid')}\`\`\``);
  });
});

describe('diagram blocks', () => {
  const fresh = refresh('README.md', read('README.md'));
  it.each([
    ['a start marker without its end', 'x\n<!-- diagram:environment:start -->\n', /no matching end/],
    ['a block the document must hold is missing', 'no markers here\n', /no block for environment/],
    [
      'an unknown diagram',
      `${fresh}<!-- diagram:nothing:start -->\n<!-- diagram:nothing:end -->\n`,
      /no diagram named nothing/,
    ],
  ])('refuses %s', (_case, text, error) => {
    expect(() => refresh('README.md', text)).toThrow(error);
  });

  it('leaves everything outside the markers as it is', () => {
    const text = read('docs/architecture.md');
    const outside = (t: string) => t.replace(/:start -->[\s\S]*?<!-- diagram:/g, '');
    const stale = text.replace('stateDiagram-v2\n', 'stateDiagram-v2\n  Stale --> Stale\n');
    expect(stale).not.toBe(text);
    expect(outside(refresh('docs/architecture.md', stale))).toBe(outside(text));
    expect(refresh('docs/architecture.md', stale)).toBe(text);
  });
});

describe('machines export', () => {
  it.each(['json', 'mermaid', 'dot'] as const)('%s is the same text every time', (format) => {
    expect(exportMachine(format)).toBe(exportMachine(format));
    expect(exportMachine(format)).not.toMatch(/undefined|\[object |=> |function/);
  });

  it('mermaid draws every transition of the machine, and nothing else', () => {
    const id = (node: AnyStateNode) => node.path.join('_');
    const end = (node: AnyStateNode, t: Transition) => (ownEdge(node, t) ? `${id(node)}_any` : id(node));
    const drawn = exportMachine('mermaid')
      .split('\n')
      .map((line) => /^\s*(\S+) --> (\S+): (.*)$/.exec(line))
      .filter((m) => m !== null)
      .flatMap(([, from, to, labels]) =>
        (labels ?? '').split(MERMAID_BREAK).map((l) => `${from} --> ${to}: ${l}`),
      );
    const expected = transitions.map((t) => `${end(t.source, t)} --> ${end(t.target, t)}: ${t.label}`);
    expect(drawn.toSorted()).toEqual(expected.toSorted());
  });

  it('dot draws every transition of the machine as its own edge, and nothing else', () => {
    const end = (node: AnyStateNode, t: Transition) => `"${ownEdge(node, t) ? `${node.id}.(any)` : node.id}"`;
    const drawn = exportMachine('dot')
      .split('\n')
      .filter((line) => line.includes(' -> ') && line.includes('label='))
      .map((line) => line.trim());
    const expected = transitions.map(
      (t) => `${end(t.source, t)} -> ${end(t.target, t)} [label="${t.label}"];`,
    );
    expect(drawn.toSorted()).toEqual(expected.toSorted());
  });

  it('dot has one cluster per region and enters each from its initial state', () => {
    const dot = exportMachine('dot');
    for (const region of ['lifecycle', 'sandbox', 'cleanup'])
      expect(dot).toContain(`subgraph "cluster_environment.${region}" {`);
    expect(dot).toContain('"environment.sandbox.[*]" -> "environment.sandbox.NoLease";');
  });

  it('json parses, names every state and rebuilds the same machine', () => {
    const config = JSON.parse(exportMachine('json')) as Parameters<typeof createMachine>[0];
    const named: string[] = [];
    const walk = (states: Record<string, { states?: Record<string, unknown> }> | undefined, at: string) => {
      for (const [key, state] of Object.entries(states ?? {})) {
        named.push(`${at}.${key}`);
        walk(state.states as never, `${at}.${key}`);
      }
    };
    walk(config.states as never, 'environment');
    expect(named.toSorted()).toEqual(allStateIds.toSorted());

    const rebuilt = createMachine(config);
    const signature = (ts: Transition[]) => ts.map((t) => `${t.source.id} ${t.label} ${t.target.id}`);
    expect(signature(transitionsOf(rebuilt))).toEqual(signature(transitions));
  });
});

describe('guard labels', () => {
  it.each([
    ['a named guard', 'leaseMatches', 'leaseMatches'],
    [
      'a guard with params',
      { type: 'currentAttempt', params: { kind: 'provision' } },
      'currentAttempt(provision)',
    ],
    ['and / not', and(['leaseMatches', not('parked')]), 'and(leaseMatches, not(parked))'],
    ['or of stateIn', or([stateIn({ sandbox: 'Released' }), 'x']), 'or(stateIn(sandbox.Released), x)'],
  ])('%s', (_case, guard, label) => {
    expect(guardLabel(guard)).toBe(label);
  });
});
