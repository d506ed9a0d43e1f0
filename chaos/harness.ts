// The chaos harness as a library: `npm run chaos` (chaos/run.ts) and the smoke test
// (test/chaos/chaos-smoke.test.ts) both call runChaos. It starts the stack (chaos/stack.ts), prints
// the seed and the whole fault schedule, runs the load driver and the schedule side by side, waits
// for reconciliation to quiesce, runs `sandlot audit --json`, checks the end state by SQL and
// returns everything the report prints. It never decides what a finding means for the caller.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditReport } from '../actors/audit.ts';
import { runAuditCommand } from './audit.ts';
import { ChaosClient } from './client.ts';
import { drive } from './driver.ts';
import { dumpDatabase } from './dump.ts';
import {
  attemptErrors,
  attemptsPerLease,
  countProviderFaults,
  type AttemptsPerLease,
  type ProviderFaults,
} from './fault-log.ts';
import { runSchedule, type FaultOutcome } from './faults.ts';
import type { EnvironmentRecord } from './lifecycle.ts';
import type { ChaosOptions } from './options.ts';
import type { Crash } from './processes.ts';
import { unknownForGood, waitQuiet, type QuiesceResult } from './quiesce.ts';
import { Recorder, type Finding } from './recorder.ts';
import { buildSchedule, formatSchedule, type ScheduledFault } from './schedule.ts';
import { ENVIRONMENTS, startStack } from './stack.ts';
import { describeDoubleMount, describeReleasedWhileLive } from './timeline.ts';
import { kubeLifetimes, simulatedLifetimes } from './timeline-sources.ts';
import { verify, type Verdict } from './verify.ts';

export interface ChaosResult {
  options: ChaosOptions;
  startedAt: string;
  children: string;
  schedule: ScheduledFault[];
  timings: { setupMs: number; loadMs: number; quiesceMs: number; totalMs: number };
  outcomes: Record<string, number>;
  environments: EnvironmentRecord[];
  counters: Record<string, number>;
  faults: FaultOutcome[];
  providerFaults: ProviderFaults;
  attemptErrors: Record<string, number>;
  /** Attempts each lease collected, by kind (chaos/fault-log.ts). */
  attemptsPerLease: Record<string, AttemptsPerLease>;
  crashes: Crash[];
  quiesce: QuiesceResult;
  /** Unknown describes, listings, sweeps and cleanup releases left: nothing settles or waits for them. */
  unknownForGood: Record<string, number>;
  audit: { exitCode: number; report: AuditReport | null; stderr: string };
  verdict: Verdict;
  findings: Finding[];
  totals: { lost: number; orphaned: number; duplicated: number };
  /**
   * True when nothing was lost, orphaned or duplicated, no resource was live after its Environment
   * was said to be Released, no volume was mounted twice at once, the audit is clean and nothing
   * else was found.
   */
  ok: boolean;
  /** The run's logs and fault records (kept when the run is not ok). */
  runDir: string;
}

export interface ChaosIo {
  /** A progress line (stderr for the command, the console for the test). */
  print(line: string): void;
}

export async function runChaos(
  options: ChaosOptions,
  io: ChaosIo,
): Promise<ChaosResult | { skipped: string }> {
  const started = Date.now();
  const recorder = new Recorder((line) =>
    io.print(`[chaos +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`),
  );
  const schedule = buildSchedule({
    seed: options.seed,
    windowMs: options.windowMs,
    apis: options.apis,
    workers: options.workers,
    killEveryMs: options.killEveryMs,
    redisFlushes: options.redisFlushes,
    pgRestarts: options.pgRestarts,
    stalls: options.stalls,
  });
  io.print(
    `chaos run: seed ${options.seed}, ${options.n} Environments, ${options.clients} clients, ` +
      `${options.apis} APIs + ${options.workers} workers, provider ${options.provider} (repeat: --seed ${options.seed})`,
  );
  io.print(
    `fault schedule (${schedule.length} faults over ${(options.windowMs / 1000).toFixed(0)} s from the first register):`,
  );
  for (const line of formatSchedule(schedule)) io.print(line);

  const runDir = await mkdtemp(join(tmpdir(), `sandlot-chaos-${options.seed}-`));
  let closing = false;
  let restartCrashed: (crash: Crash) => void = () => undefined;
  const stack = await startStack(
    options,
    runDir,
    (crash) => restartCrashed(crash),
    (line) => recorder.line(line),
  );
  if ('skipped' in stack) {
    await rm(runDir, { recursive: true, force: true });
    return stack;
  }
  restartCrashed = (crash) => {
    if (closing) return;
    recorder.find(
      'crash',
      `${crash.name} (incarnation ${crash.incarnation}) exited by itself (code ${crash.code}, signal ${crash.signal}); log ${crash.log}: ${crash.tail.slice(-600)}`,
    );
    const target = [...stack.apis, ...stack.workers].find((p) => p.name === crash.name);
    stack.disruptions.processDown(crash.name, crash.at, 'crashed');
    // A start-up that failed is retried by whoever started it (chaos/faults.ts).
    if (target !== undefined && !crash.duringStart) {
      void target.start().then(
        () => stack.disruptions.processUp(target.name, Date.now()),
        (error: unknown) =>
          recorder.line(`${crash.name} did not start again: ${String(error).slice(0, 300)}`),
      );
    }
  };
  try {
    const setupMs = Date.now() - started;
    const client = new ChaosClient(stack.endpoints, () => stack.token(), stack.disruptions, recorder);
    const loadStartedAt = Date.now();
    let done = 0;
    let failed = 0;
    const ticker = setInterval(() => {
      recorder.line(
        `load: ${done}/${options.n} lifecycles done (${failed} failed), ${recorder.get('requests')} requests`,
      );
    }, 10_000);
    const faults = runSchedule(stack, schedule, recorder, loadStartedAt);
    const { kube } = stack;
    const stopKubeFaults = kube?.startFaults(options.seed);
    let environments: EnvironmentRecord[];
    try {
      environments = await drive({
        client,
        recorder,
        seed: options.seed,
        n: options.n,
        clients: options.clients,
        environments: ENVIRONMENTS,
        lifecycleTimeoutMs: options.lifecycleTimeoutMs,
        ...(kube === null ? {} : { onVolume: (id, volume) => kube.plantVolume(id, volume) }),
        onProgress: (d, f) => {
          done = d;
          failed = f;
        },
      });
    } finally {
      clearInterval(ticker);
      stopKubeFaults?.();
    }
    const loadMs = Date.now() - loadStartedAt;
    recorder.line(
      `load done in ${(loadMs / 1000).toFixed(1)} s: ${done - failed} completed, ${failed} failed; waiting for the rest of the schedule and recoveries`,
    );
    const faultOutcomes = await faults;

    const quiesceStarted = Date.now();
    recorder.line('waiting for reconciliation to quiesce');
    let lastPrinted = 0;
    const quiesce = await waitQuiet(stack.db, options.quiesceTimeoutMs, (u) => {
      if (Date.now() - lastPrinted < 10_000) return;
      lastPrinted = Date.now();
      recorder.line(`quiesce: ${JSON.stringify(u)}`);
    });
    const quiesceMs = Date.now() - quiesceStarted;
    if (!quiesce.quiet) {
      recorder.find(
        'not-quiesced',
        `still unsettled after ${(quiesceMs / 1000).toFixed(0)} s: ${JSON.stringify(quiesce.last)}; ${quiesce.leftovers.slice(0, 20).join('; ')}`,
      );
    } else recorder.line(`quiet after ${(quiesceMs / 1000).toFixed(1)} s`);

    recorder.line('running sandlot audit --json');
    const audit = await runAuditCommand(stack.entry.script, stack.commandEnv);
    if (audit.report === null) {
      recorder.find('audit', `sandlot audit gave no report (exit ${audit.exitCode}): ${audit.stderr}`);
    } else if (audit.report.total > 0) {
      recorder.find('audit', `${audit.report.total} audit findings: ${JSON.stringify(audit.report.counts)}`);
    }
    const resources =
      kube === null ? await simulatedLifetimes(stack.db) : kubeLifetimes(kube.objectLifetimes());
    const verdict = await verify(
      stack.db,
      environments,
      audit.report,
      recorder,
      resources,
      kube?.claimsByOperation(),
    );
    for (const l of verdict.lost) recorder.find('lost', `${l.key}: ${l.why}`, l.environmentId);
    for (const d of verdict.duplicated) recorder.find('duplicated', d.why, d.environmentId);
    for (const s of verdict.staleFenceChanges) {
      recorder.find('stale-fence-changed-state', `${s.key} reached ${s.where}`, s.environmentId);
    }
    for (const f of verdict.releasedWhileLive) {
      recorder.find('released-while-live', describeReleasedWhileLive(f), f.environmentId);
    }
    for (const f of verdict.volumeDoubleMounted) {
      recorder.find('volume-double-mounted', describeDoubleMount(f), f.first.environmentId ?? undefined);
    }
    for (const r of verdict.repeatedDispatches) {
      recorder.find(
        'duplicated',
        `attempt ${r.attemptId} (${r.kind}) dispatched ${r.dispatchCount} times`,
        r.environmentId,
      );
    }
    const providerFaults =
      kube === null ? await countProviderFaults(stack.faultDir) : kubeFaults(kube.firedFaults());
    if (kube !== null) {
      const answers = Object.entries(kube.agentHostAnswers()).sort(([a], [b]) => a.localeCompare(b));
      recorder.line(
        `AgentHost stand-in in the Pods answered: ${answers.map(([k, n]) => `${k} ×${n}`).join(', ') || 'nothing'}`,
      );
    }
    const errors = await attemptErrors(stack.db);
    const perLease = await attemptsPerLease(stack.db);
    const outcomes: Record<string, number> = {};
    for (const e of environments)
      outcomes[e.outcome ?? 'not finished'] = (outcomes[e.outcome ?? 'not finished'] ?? 0) + 1;
    const totals = {
      lost: verdict.lost.length,
      orphaned: verdict.orphaned.length,
      duplicated: new Set(verdict.duplicated.map((d) => d.environmentId)).size,
    };
    const ok =
      totals.lost === 0 &&
      totals.orphaned === 0 &&
      totals.duplicated === 0 &&
      verdict.releasedWhileLive.length === 0 &&
      verdict.volumeDoubleMounted.length === 0 &&
      audit.report !== null &&
      audit.report.total === 0 &&
      recorder.findings.length === 0;
    if (!ok) {
      const dumped = await dumpDatabase(stack.pg.url, join(runDir, 'database.sql'));
      recorder.line(
        dumped === null ? `database dumped to ${join(runDir, 'database.sql')}` : `pg_dump failed: ${dumped}`,
      );
    }
    return {
      options,
      startedAt: new Date(started).toISOString(),
      children: stack.entry.note,
      schedule,
      timings: { setupMs, loadMs, quiesceMs, totalMs: Date.now() - started },
      outcomes,
      environments,
      counters: recorder.counterObject(),
      faults: faultOutcomes,
      providerFaults,
      attemptErrors: errors,
      attemptsPerLease: perLease,
      crashes: stack.crashes,
      quiesce,
      unknownForGood: await unknownForGood(stack.db),
      audit,
      verdict,
      findings: recorder.findings,
      totals,
      ok,
      runDir,
    };
  } finally {
    closing = true;
    await stack.close();
  }
}

/** The fake Kubernetes API's fired faults in the shape of the simulated injector's counts. */
function kubeFaults(fired: Record<string, number>): ProviderFaults {
  const total = Object.values(fired).reduce((a, b) => a + b, 0);
  return { byKind: fired, byOperation: {}, byRole: { 'fake Kubernetes API': total }, total };
}

/** Writes the result as `<dir>/<date>-seed<seed>.json` and returns the path. */
export async function writeResult(result: ChaosResult, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const stamp = result.startedAt.replace(/[:.]/g, '-');
  const path = join(dir, `${stamp}-seed${result.options.seed}.json`);
  // Request traces only where they explain something: a failed lifecycle or one with a finding.
  const flagged = new Set(result.findings.map((f) => f.environmentId));
  const environments = result.environments.map((e) =>
    e.outcome === 'failed' || flagged.has(e.environmentId ?? undefined) ? e : { ...e, trace: undefined },
  );
  await writeFile(path, `${JSON.stringify({ ...result, environments }, null, 2)}\n`);
  return path;
}
