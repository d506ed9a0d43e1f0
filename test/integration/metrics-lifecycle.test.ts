// The numbers on-call is paged on, after real lifecycles through the production composition over
// PostgreSQL and Redis: one lease provisioned, Active and released (each lease histogram counts it
// once, labelled with its provider and outcome; provision → readyForDispatch is timed from the first
// inspection that answered ready, once), and one whose provision the simulated provider
// answers with a 5xx (its attempt stays Unknown until its retry settles it, and the oldest-attempt
// gauge shows its age meanwhile).
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  composeProduction,
  provisionLease,
  runLifecycle,
  sender,
  type Composed,
} from './observability-support.ts';

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

type Sample = ReturnType<typeof samples>[number];

const pick = (all: Sample[], name: string, labels: Record<string, string> = {}) =>
  all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 45_000;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not happen; last: ${JSON.stringify(last)}`);
}

describe('lease histograms and on-call gauges (production composition, PostgreSQL and Redis)', () => {
  let c: Composed;
  let scrape: () => Promise<Sample[]>;

  beforeAll(async () => {
    c = await composeProduction({
      logger: pino({ level: 'silent' }),
      env: {
        SANDLOT_METRICS_PORT: '0',
        // The second provision gets a 5xx: an effect that may have happened, so Unknown. The
        // reconciler then lists nothing and retries it under the same operation (the third call),
        // whose resource settles the Unknown attempt: that retry is held 3 s, so the Unknown attempt
        // lasts long enough to be scraped on a loaded machine (released at once, the recovery beat
        // the scrape now and then, and the gauge was back at 0 before the test read it).
        SANDLOT_CALL_TIMEOUT_MS: '10000',
        SANDLOT_SIMULATED_FAULTS: JSON.stringify({
          script: [
            { operation: 'provision', call: 2, fault: 'server-error' },
            { operation: 'provision', call: 3, fault: 'latency', ms: 3_000 },
          ],
        }),
      },
    });
    scrape = async () => samples(await (await fetch(c.sandlot.metricsUrl as string)).text());
    await runLifecycle(c, 'run-1');
  }, 90_000);
  afterAll(async () => {
    await c?.close();
  });

  it('counts one provision, one release and one whole lease, by provider and outcome', async () => {
    const all = await until(
      'the lease lifetime observed',
      scrape,
      (s) => pick(s, 'sandlot_lease_lifetime_seconds_count').length > 0,
    );
    const simulated = { provider: 'simulated' };
    const count = (name: string, outcome: string) =>
      pick(all, `${name}_count`, { ...simulated, outcome }).map((s) => s.value);
    expect(count('sandlot_provision_duration_seconds', 'Active')).toEqual([1]);
    expect(count('sandlot_release_duration_seconds', 'Released')).toEqual([1]);
    expect(count('sandlot_lease_lifetime_seconds', 'Released')).toEqual([1]);
    // Nothing else was observed: one series each.
    expect(pick(all, 'sandlot_provision_duration_seconds_count')).toHaveLength(1);
    expect(pick(all, 'sandlot_release_duration_seconds_count')).toHaveLength(1);
    const sum = (name: string) => pick(all, `${name}_sum`, simulated)[0]?.value ?? -1;
    expect(sum('sandlot_provision_duration_seconds')).toBeGreaterThan(0);
    expect(sum('sandlot_release_duration_seconds')).toBeGreaterThan(0);
    // The whole lease holds both steps.
    expect(sum('sandlot_lease_lifetime_seconds')).toBeGreaterThanOrEqual(
      sum('sandlot_provision_duration_seconds') + sum('sandlot_release_duration_seconds'),
    );
    expect(pick(all, 'sandlot_lease_timing_errors_total')[0]?.value).toBe(0);
  });

  it('reads the on-call gauges at scrape time: nothing old, stale, open or parked after a clean lifecycle', async () => {
    const all = await scrape();
    const ages = pick(all, 'sandlot_oldest_unresolved_attempt_age_seconds');
    expect(ages.map((s) => [s.labels['state'], s.value]).sort()).toEqual([
      ['Dispatched', 0],
      ['Unknown', 0],
    ]);
    expect(pick(all, 'sandlot_oldest_active_observation_age_seconds').map((s) => s.value)).toEqual([0]);
    expect(
      pick(all, 'sandlot_open_cleanups')
        .map((s) => [s.labels['state'], s.value])
        .sort(),
    ).toEqual([
      ['Claimed', 0],
      ['Pending', 0],
    ]);
    const parked = pick(all, 'sandlot_parked_leases');
    expect(parked.length).toBeGreaterThan(0);
    expect(parked.every((s) => s.value === 0)).toBe(true);
    expect(pick(all, 'sandlot_metrics_collect_errors_total')).toEqual([]);
  });

  it('shows the age of an Unknown provision attempt, and times the provision that ended unresolved', async () => {
    const run = 'run-2';
    await c.seed(run);
    const { provisioned } = await provisionLease(run, sender(c));
    expect(provisioned.status).toBe(202);
    const all = await until(
      'an Unknown attempt older than zero',
      scrape,
      (s) =>
        (pick(s, 'sandlot_oldest_unresolved_attempt_age_seconds', { state: 'Unknown' })[0]?.value ?? 0) > 0 &&
        pick(s, 'sandlot_provision_duration_seconds_count', { outcome: 'ReconciliationRequired' }).length > 0,
    );
    expect(
      pick(all, 'sandlot_provision_duration_seconds_count', {
        provider: 'simulated',
        outcome: 'ReconciliationRequired',
      })[0]?.value,
    ).toBe(1);
    expect(
      pick(all, 'sandlot_provision_duration_seconds_count', { provider: 'simulated', outcome: 'Active' })[0]
        ?.value,
    ).toBe(1);
  }, 60_000);

  it('times provision → readyForDispatch once per lease: the first inspection answering ready, never a later one', async () => {
    const run = 'run-ready';
    await c.seed(run);
    const send = sender(c);
    const readyCount = async () =>
      pick(await scrape(), 'sandlot_provision_ready_duration_seconds_count', {
        provider: 'simulated',
        outcome: 'ready',
      })[0]?.value ?? 0;
    // run-1's inspections may have found its lease ready before it was released: count from here.
    const before = await readyCount();
    const { base, provisioned } = await provisionLease(run, send);
    expect(provisioned.status).toBe(202);
    // Readiness needs the network policy verified: the inspection names the generation to check.
    const inspect = `${base}/sandbox?networkPolicyGeneration=1`;
    await until(
      'the lease ready for dispatch',
      async () => (await send('GET', inspect)).body,
      (b) => b['readyForDispatch'] === true,
    );
    await until('the first ready answer observed', readyCount, (n) => n === before + 1);
    // Later answers, ready again, observe nothing more.
    for (let i = 0; i < 3; i++) expect((await send('GET', inspect)).body['readyForDispatch']).toBe(true);
    const all = await scrape();
    expect(
      pick(all, 'sandlot_provision_ready_duration_seconds_count', {
        provider: 'simulated',
        outcome: 'ready',
      })[0]?.value,
    ).toBe(before + 1);
    expect(
      pick(all, 'sandlot_provision_ready_duration_seconds_sum', {
        provider: 'simulated',
        outcome: 'ready',
      })[0]?.value,
    ).toBeGreaterThan(0);
    expect(pick(all, 'sandlot_lease_timing_errors_total')[0]?.value).toBe(0);
  });
});
