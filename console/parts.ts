// What every view of the console shares: the session and addresses it works with, the refusal box,
// tables and key-value lists, and how ages are written.
import { h, type ComponentChildren } from 'preact';
import { ProblemError, type Problem } from './api.ts';

export interface OutlineState {
  key: string;
  path: string;
  edges: { event: string; guard: string | null; target: string }[];
  states: OutlineState[];
}

export interface Session {
  tenantId: string;
  subject: string;
  operator: boolean;
  machine: { id: string; regions: OutlineState[] };
  lifecycleStates: string[];
  sandboxStates: string[];
}

export interface JournalEntry {
  revision: number;
  event: Record<string, unknown>;
  from: unknown;
  to: unknown;
  actor: string;
  source: string | null;
  recordedAt: string;
}

export interface Address {
  projectId: string;
  runId: string;
  environmentId: string;
}

/** How often the list asks again: a transition shows within a second. */
export const LIST_REFRESH_MS = 1000;
/** How long one long-poll of the lifecycle waits for the next revision. */
export const LIVE_WAIT = '20s';

export const signIn = () => window.location.assign('/console/login');

export function age(iso: string | null | undefined, now = Date.now()): string {
  if (iso === null || iso === undefined) return '-';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export function ProblemBox(props: { problem: Problem | null }): ComponentChildren {
  if (props.problem === null) return null;
  const { title, detail, status, type } = props.problem;
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('strong', null, `${status ?? ''} ${title ?? 'Refused'}`),
    detail === undefined ? null : h('p', null, detail),
    h('pre', null, JSON.stringify({ ...props.problem, type }, null, 2)),
  );
}

export const problemOf = (error: unknown): Problem =>
  error instanceof ProblemError
    ? error.problem
    : { title: 'Request failed', detail: error instanceof Error ? error.message : String(error) };

export function Table(props: {
  head: string[];
  rows: ComponentChildren[];
  empty: string;
  label: string;
}): ComponentChildren {
  if (props.rows.length === 0) return h('p', { class: 'empty' }, props.empty);
  return h(
    'table',
    { 'aria-label': props.label },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        props.head.map((name) => h('th', null, name)),
      ),
    ),
    h('tbody', null, props.rows),
  );
}

export function keyValues(label: string, pairs: [string, ComponentChildren][]): ComponentChildren {
  return h(
    'dl',
    { 'aria-label': label },
    pairs.flatMap(([key, value]) => [h('dt', null, key), h('dd', { 'data-field': key }, value)]),
  );
}
