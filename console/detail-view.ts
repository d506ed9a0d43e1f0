// One Environment, live: its regions on the machine diagram, lease, fences, readiness conditions,
// attempts (Unknown and Dispatched marked, with age), cleanups, BuildTest operations, Workspace
// flushes and the journal as a timeline; release, abandon and reconcile behind a confirmation. It
// loads, then waits on the lifecycle long-poll for the next revision, and loads again.
import { h, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type {
  EnvironmentLifecycle,
  ProviderAttempt,
  SandboxBuildTestOperation,
  SandboxBuildTestOperationList,
  SandboxInspection,
  WorkspaceFlush,
  WorkspaceFlushList,
} from '../http/typed-client/api.ts';
import { call, envPath, freshKey, get, ProblemError, SignedOut, type Problem } from './api.ts';
import { MachineView, regionLeaves } from './machine-view.ts';
import {
  age,
  keyValues,
  LIST_REFRESH_MS,
  LIVE_WAIT,
  ProblemBox,
  problemOf,
  signIn,
  Table,
  type Address,
  type JournalEntry,
  type Session,
} from './parts.ts';

interface Detail {
  lifecycle: EnvironmentLifecycle;
  sandbox: SandboxInspection | null;
  attempts: ProviderAttempt[];
  cleanups: unknown[];
  buildTests: SandboxBuildTestOperation[];
  flushes: WorkspaceFlush[];
  journal: JournalEntry[];
}

/**
 * Everything the page shows of one Environment, and `seen`: the revision the live wait goes past.
 * Everything loaded must be at least as new as `seen`, or a transition between two reads is never
 * shown; and an inspection opens its own describe of an Active sandbox, which journals an event, so
 * `seen` must include that event, or the page's own describe wakes it again and again (a page left
 * open once described the sandbox several times a second). So the inspection goes first (its
 * `environmentRevision` is read after its describe and before its own reads), then the lifecycle,
 * then the rest, and `seen` is the older of the two revisions. The lease's network policy
 * generation from the last load is asked at once, so a load normally costs one describe, not two.
 */
async function loadDetail(
  address: Address,
  knownGeneration: number | null,
): Promise<Detail & { seen: number }> {
  const path = envPath(address);
  const inspect = (generation: number | null) =>
    call<SandboxInspection>(
      'GET',
      generation === null ? `${path}/sandbox` : `${path}/sandbox?networkPolicyGeneration=${generation}`,
    );
  let sandbox: SandboxInspection | null = null;
  const answer = await inspect(knownGeneration);
  if (answer.ok) {
    const generation = answer.body.lease.networkPolicyGeneration;
    // Readiness judges every condition only when asked with the lease's own policy generation.
    if (generation === knownGeneration) sandbox = answer.body;
    else {
      const again = await inspect(generation);
      if (!again.ok) throw new ProblemError(again.problem, again.status);
      sandbox = again.body;
    }
  } else if (answer.status !== 404) throw new ProblemError(answer.problem, answer.status);
  const lifecycle = await get<EnvironmentLifecycle>(`${path}/lifecycle`);
  const operation = sandbox === null ? null : encodeURIComponent(sandbox.lease.operationId);
  const [journal, buildTests, flushes, attempts, cleanups] = await Promise.all([
    get<{ entries: JournalEntry[] }>(`${path}/journal`),
    get<SandboxBuildTestOperationList>(`${path}/sandbox/build-test/commands`),
    get<WorkspaceFlushList>(`${path}/workspace-flushes`),
    operation === null
      ? { attempts: [] as ProviderAttempt[] }
      : get<{ attempts: ProviderAttempt[] }>(`${path}/sandbox/v1/operations/${operation}/provider-attempts`),
    operation === null
      ? null
      : call<{ cleanups?: unknown[] }>('GET', `${path}/sandbox/v1/late-resource-cleanups`),
  ]);
  return {
    lifecycle,
    sandbox,
    attempts: attempts.attempts,
    cleanups: cleanups?.ok === true ? (cleanups.body.cleanups ?? []) : [],
    buildTests: buildTests.operations,
    flushes: flushes.flushes,
    journal: journal.entries,
    seen: Math.min(lifecycle.revision, sandbox?.environmentRevision ?? lifecycle.revision),
  };
}

const UNRESOLVED = new Set(['Unknown', 'Dispatched']);
/** A BuildTest operation or a flush still open: its step may still have an effect. */
const OPEN_BUILD_TEST = new Set(['Running', 'ReconciliationRequired']);
const OPEN_FLUSH = new Set(['Reserved', 'Uncertain']);

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

export function DetailView(props: { session: Session; address: Address }): ComponentChildren {
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
      let generation: number | null = null;
      while (!stop.signal.aborted) {
        try {
          const next = await loadDetail(address, generation);
          if (stop.signal.aborted) return;
          setDetail(next);
          setProblem(null);
          revision = next.seen;
          generation = next.sandbox?.lease.networkPolicyGeneration ?? null;
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
    h('h3', null, 'BuildTest operations'),
    h(Table, {
      label: 'build-test operations',
      head: [
        'operation',
        'checkpoint',
        'state',
        'step',
        'exit code',
        'capture',
        'age',
        'acknowledged',
        'cleaned',
      ],
      empty: 'No BuildTest operations.',
      rows: detail.buildTests.map((o) =>
        h(
          'tr',
          { class: OPEN_BUILD_TEST.has(o.state) ? 'unresolved' : '', 'data-operation-state': o.state },
          h('td', null, o.operationId),
          h(
            'td',
            null,
            typeof o.checkpoint['checkpointId'] === 'string' ? o.checkpoint['checkpointId'] : '-',
          ),
          h('td', null, OPEN_BUILD_TEST.has(o.state) ? h('mark', null, o.state) : o.state),
          h('td', null, o.step ?? '-'),
          h('td', null, o.exitCode === null ? '-' : String(o.exitCode)),
          h(
            'td',
            null,
            o.capture === null ? '-' : `${o.capture.length} B, sha256 ${o.capture.sha256.slice(0, 12)}…`,
          ),
          h('td', null, age(o.createdAt, now)),
          h('td', null, o.acknowledgedAt ?? '-'),
          h('td', null, o.cleanedAt ?? '-'),
        ),
      ),
    }),
    h('h3', null, 'Workspace flushes'),
    h(Table, {
      label: 'workspace flushes',
      head: ['flush', 'volume', 'state', 'data generation', 'deliveries', 'lease fences', 'age', 'settled'],
      empty: 'No Workspace flushes.',
      rows: detail.flushes.map((f) =>
        h(
          'tr',
          { class: OPEN_FLUSH.has(f.state) ? 'unresolved' : '', 'data-flush-state': f.state },
          h('td', null, f.flushOperationId),
          h('td', null, f.volumeId),
          h('td', null, OPEN_FLUSH.has(f.state) ? h('mark', null, f.state) : f.state),
          h('td', null, `${f.dataGeneration} → ${f.nextDataGeneration}`),
          h('td', null, String(f.deliveries)),
          h('td', null, `${f.lease.resourceGeneration} / ${f.lease.providerFence}`),
          h('td', null, age(f.reservedAt, now)),
          h('td', null, f.settledAt ?? '-'),
        ),
      ),
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
