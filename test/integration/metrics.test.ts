// GET /metrics on its own listener (SANDLOT_METRICS_PORT) after a sandbox lifecycle through the
// production composition over PostgreSQL and Redis: every series an operator relies on is there,
// with its labels, and no label carries an ID.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  composeProduction,
  runLifecycle,
  type Composed,
  type LifecycleResult,
} from './observability-support.ts';

/** `name{a="x",b="y"} value` lines, parsed into name, labels and value. */
function samples(text: string) {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (match === null) throw new Error(`not an exposition line: ${line}`);
      const labels: Record<string, string> = {};
      for (const m of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        labels[m[1] as string] = m[2] as string;
      }
      return { name: match[1] as string, labels, value: Number(match[3]) };
    });
}

describe('metrics listener (production composition, PostgreSQL and Redis)', () => {
  let c: Composed;
  let lifecycle: LifecycleResult;
  let text: string;

  beforeAll(async () => {
    c = await composeProduction({ logger: pino({ level: 'silent' }), env: { SANDLOT_METRICS_PORT: '0' } });
    lifecycle = await runLifecycle(c);
    // Let a reconciler pass run after the release.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const res = await fetch(c.sandlot.metricsUrl as string);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    text = await res.text();
  }, 60_000);
  afterAll(async () => {
    await c?.close();
  });

  const find = (name: string, labels: Record<string, string> = {}) =>
    samples(text).filter(
      (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
    );

  it('listens on its own loopback address, not on the API', async () => {
    expect(c.sandlot.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await c.request('GET', '/metrics')).status).toBe(404);
    const other = new URL('/other', c.sandlot.metricsUrl as string);
    expect((await fetch(other)).status).toBe(404);
  });

  it('counts transitions by machine, event and outcome, and times them', () => {
    const committed = find('sandlot_transitions_total', { machine: 'environment', outcome: 'committed' });
    const events = committed.map((s) => s.labels['event']);
    expect(events).toEqual(
      expect.arrayContaining(['sandbox.provision', 'environment.release', 'provider.succeeded']),
    );
    expect(committed.every((s) => s.value >= 1)).toBe(true);
    const count = find('sandlot_transition_duration_seconds_count', {
      machine: 'environment',
      outcome: 'committed',
    });
    expect(count[0]?.value).toBeGreaterThanOrEqual(committed.reduce((n, s) => n + s.value, 0));
    expect(find('sandlot_transition_duration_seconds_bucket', { le: '+Inf' }).length).toBeGreaterThan(0);
  });

  it('reads leases by state, unresolved attempts, outbox lag and queue depth at scrape time', () => {
    const leases = find('sandlot_leases');
    expect(leases.map((s) => s.labels['state']).sort()).toEqual(
      ['Active', 'Provisioning', 'ReconciliationRequired', 'Releasing'].sort(),
    );
    // The only lease is Released now: no current lease is left.
    expect(leases.every((s) => s.value === 0)).toBe(true);
    expect(text).toContain('# TYPE sandlot_unresolved_attempts gauge');
    for (const s of find('sandlot_unresolved_attempts')) {
      expect(Object.keys(s.labels).sort()).toEqual(['age', 'kind', 'state']);
    }
    const lag = find('sandlot_outbox_lag_seconds');
    expect(lag).toHaveLength(1);
    expect(lag[0]?.value).toBeGreaterThanOrEqual(0);
    const queues = find('sandlot_queue_jobs');
    expect(new Set(queues.map((s) => s.labels['queue']))).toEqual(new Set(['effects', 'maintenance']));
    expect(new Set(queues.map((s) => s.labels['state']))).toEqual(
      new Set(['waiting', 'active', 'delayed', 'failed']),
    );
    expect(find('sandlot_metrics_collect_errors_total')).toEqual([]);
  });

  it('times provider calls by kind and outcome, and effect jobs by their wait', () => {
    expect(
      find('sandlot_provider_call_duration_seconds_count', { kind: 'provision', outcome: 'Succeeded' })[0]
        ?.value,
    ).toBe(1);
    expect(
      find('sandlot_provider_call_duration_seconds_count', { kind: 'release', outcome: 'Succeeded' })[0]
        ?.value,
    ).toBe(1);
    expect(find('sandlot_queue_job_wait_seconds_count', { queue: 'effects' })[0]?.value).toBeGreaterThan(0);
  });

  it('counts reconciler passes and what they did', () => {
    expect(find('sandlot_reconciler_passes_total')[0]?.value).toBeGreaterThan(0);
    expect(find('sandlot_reconciler_actions_total').map((s) => s.labels['action'])).toEqual(
      expect.arrayContaining(['expired', 'reconciling', 'expiredLeases', 'swept', 'cleanupsClaimed']),
    );
    expect(find('sandlot_observer_retired_total')).toHaveLength(1);
  });

  it('times HTTP requests by route pattern and status, never by raw path', () => {
    const http = find('sandlot_http_request_duration_seconds_count');
    const routes = http.map((s) => s.labels['route']);
    expect(routes).toEqual(
      expect.arrayContaining([
        '/api/projects/:projectId/runs/:runId/environments',
        '/api/projects/:projectId/runs/:runId/environments/:environmentId/sandbox/provision',
      ]),
    );
    expect(
      find('sandlot_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/projects/:projectId/runs/:runId/environments',
        status: '201',
      })[0]?.value,
    ).toBe(1);
    expect(text).not.toContain(lifecycle.environmentId);
    expect(text).not.toContain(lifecycle.operationId);
  });

  it('exports the default process metrics with the sandlot_ prefix', () => {
    expect(
      find('sandlot_process_resident_memory_bytes').length +
        find('sandlot_nodejs_heap_size_total_bytes').length,
    ).toBeGreaterThan(0);
    expect(find('sandlot_nodejs_eventloop_lag_seconds')).toHaveLength(1);
  });
});
