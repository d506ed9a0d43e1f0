// A queue job may carry its attempt's Environment, which saves the worker a lookup. It is only a
// hint: one the attempt row does not bear out (another Environment's ID, one that does not exist)
// changes nothing there, and the attempt still runs under its own Environment's lock.
import { describe, expect, it } from 'vitest';
import { runAttempt } from '../../workers/effect-processor.ts';
import { backends } from '../support/databases.ts';
import type { Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, type Scenario } from '../support/sandbox-flow.ts';
import {
  attemptDepsOf,
  countingProvider,
  environmentRows,
  inFreshHarness,
  mutableRows,
} from '../support/sandbox-scenarios.ts';

async function pendingProvision(h: Harness, run: string): Promise<{ s: Scenario; attemptId: string }> {
  const s = await setupScenario(h, { run });
  const res = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s),
  });
  expect(res.status).toBe(202);
  await json(res);
  const rows = await environmentRows(h.db, s.environmentId);
  expect(rows.attempts.map((a) => [a.kind, a.state])).toEqual([['provision', 'Pending']]);
  return { s, attemptId: rows.attempts[0]!.attemptId };
}

describe.each(backends)('effect job hints (%s)', (backend) => {
  it('a wrong or unknown Environment hint still runs the attempt under its own Environment only', async () => {
    await inFreshHarness(backend, { workers: false }, async (h) => {
      const a = await pendingProvision(h, 'run-hint-a');
      const b = await pendingProvision(h, 'run-hint-b');
      const provider = countingProvider(h.provider);
      const deps = attemptDepsOf(h, provider);
      const bBefore = await environmentRows(h.db, b.s.environmentId);

      // A's attempt, told it is B's: B is untouched, A's lease is Active.
      expect(await runAttempt(deps, a.attemptId, new AbortController().signal, b.s.environmentId)).toBe(true);
      expect(provider.calls.provision).toBe(1);
      const aAfter = await environmentRows(h.db, a.s.environmentId);
      expect(aAfter.attempts.map((x) => [x.kind, x.state])).toEqual([['provision', 'Succeeded']]);
      expect(mutableRows(await environmentRows(h.db, b.s.environmentId))).toEqual(mutableRows(bBefore));

      // B's attempt, told an Environment that does not exist: it runs as B's.
      const unknown = 'env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
      expect(await runAttempt(deps, b.attemptId, new AbortController().signal, unknown)).toBe(true);
      expect(provider.calls.provision).toBe(2);
      const bAfter = await environmentRows(h.db, b.s.environmentId);
      expect(bAfter.attempts.map((x) => [x.kind, x.state])).toEqual([['provision', 'Succeeded']]);

      // A redelivery with the right hint is the usual no-op: nothing is called twice.
      expect(await runAttempt(deps, a.attemptId, new AbortController().signal, a.s.environmentId)).toBe(
        false,
      );
      expect(provider.calls.provision).toBe(2);
    });
  });
});

describe.each(backends)('an attempt the caller runs itself (%s)', (backend) => {
  it('an inspection’s describe is not handed to the queue: the inspection runs it, once', async () => {
    await inFreshHarness(backend, { workers: false }, async (h) => {
      const { s, attemptId } = await pendingProvision(h, 'run-runs-here');
      expect(await runAttempt(attemptDepsOf(h, h.provider), attemptId, new AbortController().signal)).toBe(
        true,
      );
      const handed: string[] = [];
      h.runtime.setEffectSink((rows) => handed.push(...rows.map((r) => String(r.attemptId))));
      const res = await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token });
      expect(res.status).toBe(200);
      const rows = await environmentRows(h.db, s.environmentId);
      const describes = rows.attempts.filter((a) => a.kind === 'describe');
      expect(describes.map((a) => a.state)).toEqual(['Succeeded']);
      expect(handed).toEqual([]);
      // Its outbox row was acknowledged by the run itself, so no relay publishes it later.
      const outbox = await h.db.query<{ acknowledged: boolean }>(
        'SELECT acknowledged_at IS NOT NULL AS acknowledged FROM outbox WHERE attempt_id = $1',
        [describes[0]!.attemptId],
      );
      expect(outbox.rows).toEqual([{ acknowledged: true }]);
    });
  });
});
