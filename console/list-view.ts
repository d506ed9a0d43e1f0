// The Environment list: its filters (kept in the browser's storage), cursor pages and a refresh
// every second, so a transition shows without a reload.
import { h, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { EnvironmentPage, EnvironmentSummary } from '../http/typed-client/api.ts';
import { get, SignedOut, type Problem } from './api.ts';
import { age, LIST_REFRESH_MS, ProblemBox, problemOf, signIn, Table, type Session } from './parts.ts';

interface Filters {
  projectId: string;
  runId: string;
  lifecycleState: string;
  sandboxState: string;
  hasUnresolvedAttempts: string;
  hasPendingCleanups: string;
  updatedSince: string;
}

const FILTERS_KEY = 'sandlot-console-filters';
const noFilters: Filters = {
  projectId: '',
  runId: '',
  lifecycleState: '',
  sandboxState: '',
  hasUnresolvedAttempts: '',
  hasPendingCleanups: '',
  updatedSince: '',
};

function savedFilters(): Filters {
  try {
    return { ...noFilters, ...(JSON.parse(sessionStorage.getItem(FILTERS_KEY) ?? '{}') as Partial<Filters>) };
  } catch {
    return noFilters;
  }
}

function listPath(filters: Filters, cursor: string | null): string {
  const query = new URLSearchParams();
  for (const name of [
    'lifecycleState',
    'sandboxState',
    'hasUnresolvedAttempts',
    'hasPendingCleanups',
  ] as const) {
    if (filters[name] !== '') query.set(name, filters[name]);
  }
  if (filters.updatedSince !== '') query.set('updatedSince', new Date(filters.updatedSince).toISOString());
  if (cursor !== null) query.set('cursor', cursor);
  const project = `/projects/${encodeURIComponent(filters.projectId)}`;
  const base =
    filters.runId === ''
      ? `${project}/environments`
      : `${project}/runs/${encodeURIComponent(filters.runId)}/environments`;
  const text = query.toString();
  return text === '' ? base : `${base}?${text}`;
}

function select(
  name: keyof Filters,
  label: string,
  values: string[],
  filters: Filters,
  set: (f: Filters) => void,
) {
  return h(
    'label',
    null,
    `${label} `,
    h(
      'select',
      {
        name,
        value: filters[name],
        onChange: (e: Event) => set({ ...filters, [name]: (e.target as HTMLSelectElement).value }),
      },
      h('option', { value: '' }, 'any'),
      values.map((value) => h('option', { value }, value)),
    ),
  );
}

export function ListView(props: { session: Session }): ComponentChildren {
  const [filters, setFilters] = useState<Filters>(savedFilters);
  const [draft, setDraft] = useState<Filters>(filters);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<EnvironmentPage | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const cursor = cursors[cursors.length - 1] ?? null;

  useEffect(() => {
    if (filters.projectId === '') return undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const answer = await get<EnvironmentPage>(listPath(filters, cursor));
        if (stopped) return;
        setPage(answer);
        setProblem(null);
      } catch (error) {
        if (error instanceof SignedOut) return signIn();
        if (!stopped) setProblem(problemOf(error));
      }
      if (!stopped) timer = setTimeout(() => void load(), LIST_REFRESH_MS);
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [filters, cursor]);

  const apply = (e: Event) => {
    e.preventDefault();
    sessionStorage.setItem(FILTERS_KEY, JSON.stringify(draft));
    setFilters(draft);
    setCursors([null]);
    setPage(null);
  };
  const text = (name: keyof Filters, label: string, type = 'text') =>
    h(
      'label',
      null,
      `${label} `,
      h('input', {
        name,
        type,
        value: draft[name],
        onInput: (e: Event) => setDraft({ ...draft, [name]: (e.target as HTMLInputElement).value }),
      }),
    );
  const yesNo = ['true', 'false'];
  const rows = (page?.environments ?? []).map((env: EnvironmentSummary) =>
    h(
      'tr',
      { 'data-environment': env.environmentId },
      h(
        'td',
        null,
        h('a', { href: `#/env/${env.projectId}/${env.runId}/${env.environmentId}` }, env.environmentId),
      ),
      h('td', null, env.runId),
      h('td', null, env.idempotencyKey),
      h('td', { class: 'state' }, env.state),
      h('td', { class: 'sandbox-state' }, env.sandboxState ?? '-'),
      h('td', null, String(env.lifecycleGeneration)),
      h('td', { class: env.unresolvedAttempts > 0 ? 'unresolved' : '' }, String(env.unresolvedAttempts)),
      h('td', null, String(env.pendingCleanups)),
      h('td', null, env.leaseExpiresAt ?? '-'),
      h('td', { title: env.updatedAt }, `${age(env.updatedAt)} ago`),
    ),
  );
  return h(
    'section',
    null,
    h('h2', null, 'Environments'),
    h(
      'form',
      { class: 'filters', onSubmit: apply },
      text('projectId', 'project'),
      text('runId', 'run (optional)'),
      select('lifecycleState', 'lifecycle', props.session.lifecycleStates, draft, setDraft),
      select('sandboxState', 'sandbox', props.session.sandboxStates, draft, setDraft),
      select('hasUnresolvedAttempts', 'unresolved attempts', yesNo, draft, setDraft),
      select('hasPendingCleanups', 'pending cleanups', yesNo, draft, setDraft),
      text('updatedSince', 'updated since', 'datetime-local'),
      h('button', { type: 'submit' }, 'Show'),
    ),
    h(ProblemBox, { problem }),
    filters.projectId === ''
      ? h('p', { class: 'empty' }, 'Name a project to list its Environments.')
      : h(Table, {
          label: 'environments',
          head: [
            'environment',
            'run',
            'key',
            'lifecycle',
            'sandbox',
            'generation',
            'unresolved',
            'cleanups',
            'lease expires',
            'updated',
          ],
          rows,
          empty: page === null ? 'Loading…' : 'No Environment matches.',
        }),
    h(
      'p',
      { class: 'pages' },
      cursors.length > 1
        ? h('button', { onClick: () => setCursors(cursors.slice(0, -1)) }, 'Previous page')
        : null,
      page?.nextCursor
        ? h('button', { onClick: () => setCursors([...cursors, page.nextCursor]) }, 'Next page')
        : null,
    ),
  );
}
