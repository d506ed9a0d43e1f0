// The operator console (served at /console by http/routes/console.ts, bundled by esbuild with
// preact): the Environment list with its filters, and one Environment live (the machine's regions
// with the current states, lease, fences, readiness conditions, attempts, cleanups and the journal),
// with release, abandon and reconcile behind a confirmation. Every call goes through api.ts.
import { h, render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type {
  EnvironmentLifecycle,
  EnvironmentPage,
  EnvironmentSummary,
  ProviderAttempt,
  SandboxInspection,
} from '../http/typed-client/api.ts';
import { call, envPath, freshKey, get, ProblemError, SignedOut, type Problem } from './api.ts';

interface OutlineState {
  key: string;
  path: string;
  edges: { event: string; guard: string | null; target: string }[];
  states: OutlineState[];
}

interface Session {
  tenantId: string;
  subject: string;
  operator: boolean;
  machine: { id: string; regions: OutlineState[] };
  lifecycleStates: string[];
  sandboxStates: string[];
}

interface JournalEntry {
  revision: number;
  event: Record<string, unknown>;
  from: unknown;
  to: unknown;
  actor: string;
  source: string | null;
  recordedAt: string;
}

interface Address {
  projectId: string;
  runId: string;
  environmentId: string;
}

/** How often the list asks again: a transition shows within a second. */
const LIST_REFRESH_MS = 1000;
/** How long one long-poll of the lifecycle waits for the next revision. */
const LIVE_WAIT = '20s';

const signIn = () => window.location.assign('/console/login');

function age(iso: string | null | undefined, now = Date.now()): string {
  if (iso === null || iso === undefined) return '-';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

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
function regionLeaves(value: unknown): Record<string, string> {
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

function ProblemBox(props: { problem: Problem | null }): ComponentChildren {
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

const problemOf = (error: unknown): Problem =>
  error instanceof ProblemError
    ? error.problem
    : { title: 'Request failed', detail: error instanceof Error ? error.message : String(error) };

function Table(props: {
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

// ---- The list ------------------------------------------------------------------------------------

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

function ListView(props: { session: Session }): ComponentChildren {
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

// ---- One Environment -----------------------------------------------------------------------------

interface Detail {
  lifecycle: EnvironmentLifecycle;
  sandbox: SandboxInspection | null;
  attempts: ProviderAttempt[];
  cleanups: unknown[];
  journal: JournalEntry[];
}

async function loadDetail(address: Address): Promise<Detail> {
  const path = envPath(address);
  const [lifecycle, sandboxAnswer, journal] = await Promise.all([
    get<EnvironmentLifecycle>(`${path}/lifecycle`),
    call<SandboxInspection>('GET', `${path}/sandbox`),
    get<{ entries: JournalEntry[] }>(`${path}/journal`),
  ]);
  let sandbox: SandboxInspection | null = null;
  if (sandboxAnswer.ok) {
    // Asked again with the lease's own policy generation, so readiness judges every condition.
    const generation = sandboxAnswer.body.lease.networkPolicyGeneration;
    sandbox = await get<SandboxInspection>(`${path}/sandbox?networkPolicyGeneration=${generation}`);
  } else if (sandboxAnswer.status !== 404)
    throw new ProblemError(sandboxAnswer.problem, sandboxAnswer.status);
  let attempts: ProviderAttempt[] = [];
  let cleanups: unknown[] = [];
  if (sandbox !== null) {
    const operation = encodeURIComponent(sandbox.lease.operationId);
    const [attemptAnswer, cleanupAnswer] = await Promise.all([
      get<{ attempts: ProviderAttempt[] }>(`${path}/sandbox/v1/operations/${operation}/provider-attempts`),
      call<{ cleanups?: unknown[] }>('GET', `${path}/sandbox/v1/late-resource-cleanups`),
    ]);
    attempts = attemptAnswer.attempts;
    cleanups = cleanupAnswer.ok ? (cleanupAnswer.body.cleanups ?? []) : [];
  }
  return { lifecycle, sandbox, attempts, cleanups, journal: journal.entries };
}

function StateBox(props: { state: OutlineState; active: Set<string> }): ComponentChildren {
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

function MachineView(props: { machine: Session['machine']; value: unknown }): ComponentChildren {
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

const UNRESOLVED = new Set(['Unknown', 'Dispatched']);

function Actions(props: { address: Address; detail: Detail; onDone: () => void }): ComponentChildren {
  const [problem, setProblem] = useState<Problem | null>(null);
  const [result, setResult] = useState<string>('');
  const { address, detail } = props;
  const lease = detail.sandbox?.lease ?? null;
  const act = async (name: string, path: string, body: unknown) => {
    if (!window.confirm(`${name} ${address.environmentId}?`)) return;
    setProblem(null);
    setResult('');
    try {
      const answer = await call<{ state?: string }>('POST', `${envPath(address)}${path}`, body);
      if (answer.ok) setResult(`${name}: ${answer.status} ${answer.body.state ?? ''}`);
      else setProblem(answer.problem);
    } catch (error) {
      if (error instanceof SignedOut) return signIn();
      setProblem(problemOf(error));
    }
    props.onDone();
  };
  // Abandon and reconcile name the lease by its fences; without a lease there is nothing to act on.
  type Lease = NonNullable<typeof lease>;
  const leaseButton = (name: string, path: string, body: (l: Lease) => unknown) =>
    h(
      'button',
      { disabled: lease === null, onClick: () => lease !== null && void act(name, path, body(lease)) },
      name,
    );
  return h(
    'section',
    { class: 'actions' },
    h('h3', null, 'Actions'),
    h(
      'button',
      {
        onClick: () =>
          void act('Release', '/release', {
            expectedLifecycleGeneration: detail.lifecycle.lifecycleGeneration,
            idempotencyKey: freshKey('release'),
          }),
      },
      'Release',
    ),
    leaseButton('Abandon', '/sandbox/abandon', (l) => ({
      resourceGeneration: l.resourceGeneration,
      providerFence: l.providerFence,
      idempotencyKey: freshKey('abandon'),
    })),
    leaseButton('Reconcile', '/sandbox/reconcile', (l) => ({
      operationId: l.operationId,
      resourceGeneration: l.resourceGeneration,
      providerFence: l.providerFence,
    })),
    result === '' ? null : h('p', { class: 'result', role: 'status' }, result),
    h(ProblemBox, { problem }),
  );
}

function keyValues(label: string, pairs: [string, ComponentChildren][]): ComponentChildren {
  return h(
    'dl',
    { 'aria-label': label },
    pairs.flatMap(([key, value]) => [h('dt', null, key), h('dd', { 'data-field': key }, value)]),
  );
}

function DetailView(props: { session: Session; address: Address }): ComponentChildren {
  const { address } = props;
  const [detail, setDetail] = useState<Detail | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [reloads, setReloads] = useState(0);
  const [now, setNow] = useState(Date.now());

  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, []);

  // Load, then wait on the lifecycle long-poll for the next revision and load again.
  useEffect(() => {
    const stop = new AbortController();
    const run = async () => {
      let revision: number | null = null;
      while (!stop.signal.aborted) {
        try {
          const next = await loadDetail(address);
          if (stop.signal.aborted) return;
          setDetail(next);
          setProblem(null);
          revision = next.lifecycle.revision;
          await get<EnvironmentLifecycle>(
            `${envPath(address)}/lifecycle?wait=${LIVE_WAIT}&after=${revision}`,
            stop.signal,
          );
        } catch (error) {
          if (stop.signal.aborted) return;
          if (error instanceof SignedOut) return signIn();
          setProblem(problemOf(error));
          await new Promise((resolve) => setTimeout(resolve, LIST_REFRESH_MS));
        }
      }
    };
    void run();
    return () => stop.abort();
  }, [address.projectId, address.runId, address.environmentId, reloads]);

  if (detail === null) return h('section', null, h('p', null, 'Loading…'), h(ProblemBox, { problem }));
  const { lifecycle, sandbox, attempts, journal } = detail;
  const current = journal[journal.length - 1]?.to ?? null;
  const lease = sandbox?.lease ?? null;
  return h(
    'section',
    { class: 'detail' },
    h('p', null, h('a', { href: '#/' }, '← Environments')),
    h('h2', null, lifecycle.environmentId),
    h(ProblemBox, { problem }),
    keyValues('environment', [
      ['project / run', `${lifecycle.projectId} / ${lifecycle.runId}`],
      ['lifecycle', lifecycle.state],
      ['lifecycle generation', String(lifecycle.lifecycleGeneration)],
      ['revision', String(lifecycle.revision)],
      ['updated', `${lifecycle.updatedAt} (${age(lifecycle.updatedAt, now)} ago)`],
    ]),
    h('h3', null, 'Machine'),
    h(MachineView, { machine: props.session.machine, value: current }),
    h('h3', null, 'Lease'),
    lease === null
      ? h('p', { class: 'empty' }, 'No sandbox lease.')
      : keyValues('lease', [
          ['state', `${lease.state}${lease.current ? '' : ' (not current)'}`],
          ['phase', lease.phase ?? '-'],
          ['operation', lease.operationId],
          [
            'resource generation / provider fence / fencing',
            `${lease.resourceGeneration} / ${lease.providerFence} / ${lease.currentFencingGeneration}`,
          ],
          ['resource', lease.resourceId ?? '-'],
          ['workspace', `${lease.workspace.volumeId} (data generation ${lease.workspace.dataGeneration})`],
          ['expires', lease.expiresAt ?? '-'],
          ['failure', lease.failure === null ? '-' : `${lease.failure.code}: ${lease.failure.message}`],
          ['ready for dispatch', sandbox === null ? '-' : String(sandbox.readyForDispatch)],
        ]),
    sandbox === null
      ? null
      : h(Table, {
          label: 'conditions',
          head: ['condition', 'status', 'reason', 'message'],
          empty: 'No conditions.',
          rows: sandbox.conditions.map((c) =>
            h(
              'tr',
              { class: c.status === 'True' ? '' : 'unresolved' },
              h('td', null, c.type),
              h('td', null, c.status),
              h('td', null, c.reason),
              h('td', null, c.message),
            ),
          ),
        }),
    h('h3', null, 'Provider attempts'),
    h(Table, {
      label: 'attempts',
      head: ['attempt', 'kind', 'state', 'age', 'dispatched', 'resolution'],
      empty: 'No attempts.',
      rows: attempts.map((a) =>
        h(
          'tr',
          { class: UNRESOLVED.has(a.state) ? 'unresolved' : '', 'data-attempt-state': a.state },
          h('td', null, a.attemptId),
          h('td', null, a.kind),
          h('td', null, UNRESOLVED.has(a.state) ? h('mark', null, a.state) : a.state),
          h('td', null, age(a.createdAt, now)),
          h('td', null, String(a.dispatchCount)),
          h('td', null, a.resolution ?? (a.error === null ? '-' : a.error.code)),
        ),
      ),
    }),
    h('h3', null, 'Late-resource cleanups'),
    h(Table, {
      label: 'cleanups',
      head: ['cleanup'],
      empty: 'No cleanups.',
      rows: detail.cleanups.map((c) => h('tr', null, h('td', null, h('code', null, JSON.stringify(c))))),
    }),
    h(Actions, { address, detail, onDone: () => setReloads((n) => n + 1) }),
    h('h3', null, 'Journal'),
    h(
      'ol',
      { class: 'journal', 'aria-label': 'journal' },
      [...journal].reverse().map((entry) => {
        const before = regionLeaves(entry.from);
        const after = regionLeaves(entry.to);
        const changed = Object.keys(after).filter((region) => before[region] !== after[region]);
        return h(
          'li',
          { 'data-revision': entry.revision },
          h('span', { class: 'revision' }, `r${entry.revision}`),
          ' ',
          h('strong', null, typeof entry.event['type'] === 'string' ? entry.event['type'] : '?'),
          ` by ${entry.actor}${entry.source === null ? '' : ` (${entry.source})`} · ${entry.recordedAt}`,
          h(
            'ul',
            null,
            changed.length === 0
              ? h('li', null, 'no state changed')
              : changed.map((region) =>
                  h('li', null, `${region}: ${before[region] ?? '(none)'} → ${after[region]}`),
                ),
          ),
        );
      }),
    ),
  );
}

// ---- The page ------------------------------------------------------------------------------------

function routeOf(hash: string): Address | null {
  const match = /^#\/env\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(hash);
  if (match === null) return null;
  const [, projectId, runId, environmentId] = match.map((part) => decodeURIComponent(part));
  return { projectId: projectId!, runId: runId!, environmentId: environmentId! };
}

function App(): ComponentChildren {
  const [session, setSession] = useState<Session | null>(null);
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onHash = () => setHash(window.location.hash);
    window.addEventListener('hashchange', onHash);
    void fetch('/console/session', { headers: { accept: 'application/json' } }).then(async (response) => {
      if (response.status === 401) return signIn();
      setSession((await response.json()) as Session);
    });
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (session === null) return h('p', null, 'Loading…');
  const address = routeOf(hash);
  return h(
    'main',
    null,
    h(
      'header',
      null,
      h('h1', null, h('a', { href: '#/' }, 'Sandlot console')),
      h(
        'form',
        { method: 'post', action: '/console/logout', class: 'who' },
        `${session.subject} (tenant ${session.tenantId}${session.operator ? ', operator' : ''}) `,
        h('button', { type: 'submit' }, 'Sign out'),
      ),
    ),
    address === null ? h(ListView, { session }) : h(DetailView, { session, address }),
  );
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
main{max-width:78rem;margin:0 auto;padding:1rem}
header{display:flex;justify-content:space-between;align-items:center}
header h1{font-size:1.3rem} header a{color:inherit;text-decoration:none}
table{border-collapse:collapse;width:100%;background:#fff;margin:.5rem 0}
th,td{border-bottom:1px solid #dde1e6;padding:.3rem .5rem;text-align:left;vertical-align:top}
tr.unresolved td,td.unresolved{background:#fff4d6}
mark{background:#f5b400;padding:0 .25rem;border-radius:3px}
.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin-bottom:.5rem}
.problem{border:1px solid #d0342c;background:#fdecea;padding:.5rem;margin:.5rem 0}
.problem pre{white-space:pre-wrap;margin:.3rem 0 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:#fff;padding:.5rem}
dt{color:#5a6470} dd{margin:0}
.machine{display:flex;flex-wrap:wrap;gap:.5rem}
.region{background:#fff;border:1px solid #c8ced6;padding:.4rem;min-width:12rem}
.region h4{margin:0 0 .3rem}
.state-box{border:1px solid #c8ced6;border-radius:4px;padding:.15rem .4rem;margin:.15rem 0;color:#5a6470}
.state-box.active{border:2px solid #0b6bcb;background:#e6f0fb;color:#0b3d73;font-weight:600}
.children{margin-left:.5rem}
.edges{margin:.2rem 0 0 .6rem;padding:0;font-weight:400;font-size:12px}
.journal{background:#fff;padding:.5rem 2rem}
.empty{color:#5a6470}
.actions button{margin-right:.5rem}
`;

const style = document.createElement('style');
style.textContent = STYLE;
document.head.append(style);
render(h(App, null), document.getElementById('app')!);
