// The generated machine diagram with the active state of each region highlighted, and the leaf
// state of each region for the journal's before → after lines.
import { h, type ComponentChildren } from 'preact';
import type { OutlineState, Session } from './parts.ts';

/** The dot paths a state value names: {sandbox: {Active: 'Ready'}} → sandbox, sandbox.Active, … */
export function activePaths(value: unknown, prefix = ''): Set<string> {
  const paths = new Set<string>();
  if (typeof value === 'string') {
    paths.add(`${prefix}${value}`);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      paths.add(`${prefix}${key}`);
      for (const path of activePaths(child, `${prefix}${key}.`)) paths.add(path);
    }
  }
  return paths;
}

/** The leaf state of each region, for the journal's before → after columns. */
export function regionLeaves(value: unknown): Record<string, string> {
  const leaves: Record<string, string> = {};
  if (value === null || typeof value !== 'object') return leaves;
  for (const [region, child] of Object.entries(value as Record<string, unknown>)) {
    let node: unknown = child;
    const parts: string[] = [];
    while (node !== null && typeof node === 'object') {
      const [key, next] = Object.entries(node as Record<string, unknown>)[0] ?? [];
      if (key === undefined) break;
      parts.push(key);
      node = next;
    }
    if (typeof node === 'string') parts.push(node);
    leaves[region] = parts.join('.');
  }
  return leaves;
}

export function StateBox(props: { state: OutlineState; active: Set<string> }): ComponentChildren {
  const { state, active } = props;
  const on = active.has(state.path);
  return h(
    'div',
    {
      class: on ? 'state-box active' : 'state-box',
      'data-state': state.path,
      'aria-current': on ? 'true' : undefined,
    },
    h('span', { class: 'state-name' }, state.key),
    on && state.states.length === 0 && state.edges.length > 0
      ? h(
          'ul',
          { class: 'edges' },
          state.edges.map((edge) => h('li', null, `${edge.event} → ${edge.target.split('.').pop() ?? ''}`)),
        )
      : null,
    state.states.length === 0
      ? null
      : h(
          'div',
          { class: 'children' },
          state.states.map((child) => h(StateBox, { state: child, active })),
        ),
  );
}

export function MachineView(props: { machine: Session['machine']; value: unknown }): ComponentChildren {
  const active = activePaths(props.value);
  return h(
    'div',
    { class: 'machine', 'aria-label': 'machine' },
    props.machine.regions.map((region) =>
      h(
        'div',
        { class: 'region', 'data-region': region.key },
        h('h4', null, region.key),
        h(
          'div',
          { class: 'children' },
          region.states.map((state) => h(StateBox, { state, active })),
        ),
      ),
    ),
  );
}
