// The chaos run's report, as text: outcomes, faults by kind, recovery after each fault, the audit,
// the whole-run checks, the findings, and last the one line `N lost, N orphaned, N duplicated`.
import type { ChaosResult } from './harness.ts';

const s = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
const pad = (text: string, width: number) => text.padEnd(width);

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? null;
}

export function totalsLine(result: Pick<ChaosResult, 'totals'>): string {
  const { lost, orphaned, duplicated } = result.totals;
  return `${lost} lost, ${orphaned} orphaned, ${duplicated} duplicated`;
}

export function formatReport(result: ChaosResult, resultsPath: string | null): string {
  const { options: o, timings: t } = result;
  const lines: string[] = [];
  const section = (title: string) => lines.push('', title);
  lines.push(
    `Sandlot chaos report — seed ${o.seed} (repeat with --seed ${o.seed}), ${result.startedAt}`,
    `${o.n} Environments, ${o.clients} clients, ${o.apis} APIs + ${o.workers} workers, provider ${o.provider}, ` +
      `call timeout ${o.callTimeoutMs} ms; children: ${result.children}`,
    `set-up ${s(t.setupMs)}, load ${s(t.loadMs)}, quiesce ${s(t.quiesceMs)}, total ${s(t.totalMs)}`,
  );

  section('Environments completed, by outcome:');
  for (const [outcome, n] of Object.entries(result.outcomes)) lines.push(`  ${pad(outcome, 28)} ${n}`);

  section('Requests and what the clients rode out:');
  for (const [name, n] of Object.entries(result.counters)) {
    if (!name.startsWith('faults:')) lines.push(`  ${pad(name, 78)} ${n}`);
  }

  section('Faults injected, by kind:');
  for (const [name, n] of Object.entries(result.counters)) {
    if (name.startsWith('faults:')) lines.push(`  ${pad(name.slice('faults: '.length), 44)} ${n}`);
  }
  const pf = result.providerFaults;
  const source = o.provider === 'simulated' ? 'simulated injector' : 'fake Kubernetes API';
  lines.push(`  ${pad(`provider faults (${source}), total`, 44)} ${pf.total}`);
  for (const [kind, n] of Object.entries(pf.byKind).sort()) lines.push(`    ${pad(kind, 42)} ${n}`);
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  if (Object.keys(pf.byOperation).length > 0) lines.push(`    by operation: ${list(pf.byOperation)}`);
  lines.push(
    `    by process: ${list(pf.byRole)}`,
    `  attempts by recorded error: ${Object.entries(result.attemptErrors)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `  attempts per lease (leases: p50 / p99 / max): ${Object.entries(result.attemptsPerLease)
      .map(([k, a]) => `${k} ${a.leases}: ${a.p50} / ${a.p99} / ${a.max}`)
      .join(', ')}`,
    `  results recorded after their lease moved on (stale writes, fenced): ${result.verdict.lateResults}`,
  );
  if (result.crashes.length > 0)
    lines.push(`  processes that exited by themselves: ${result.crashes.length}`);

  section('Recovery after each fault (until everything in flight at the fault moved again):');
  const recovered: number[] = [];
  for (const f of result.faults) {
    const r = f.recovery;
    if (r?.recoveredMs != null) recovered.push(r.recoveredMs);
    const inFlight =
      r === null
        ? 'in flight unknown'
        : `${r.inFlightEnvironments} env / ${r.inFlightAttempts} attempts in flight`;
    const took = f.durationMs === null ? '' : ` (took ${s(f.durationMs)})`;
    const outcome =
      f.error !== null
        ? `failed: ${f.error}`
        : r === null
          ? '—'
          : r.recoveredMs === null
            ? `NOT RECOVERED: ${r.stuck.slice(0, 3).join('; ')}`
            : `recovered in ${s(r.recoveredMs)}`;
    lines.push(
      `  +${s(f.atMs).padStart(8)}  ${pad(f.description + took, 58)} ${pad(inFlight, 34)} ${outcome}`,
    );
  }
  recovered.sort((a, b) => a - b);
  lines.push(
    `  recovery: median ${s(percentile(recovered, 50))}, p90 ${s(percentile(recovered, 90))}, max ${s(percentile(recovered, 100))}`,
  );

  section('Quiescence:');
  lines.push(
    result.quiesce.quiet
      ? `  quiet ${s(result.quiesce.waitedMs)} after the load and the schedule ended`
      : `  NOT quiet after ${s(result.quiesce.waitedMs)}: ${JSON.stringify(result.quiesce.last)}`,
  );
  for (const left of result.quiesce.leftovers.slice(0, 20)) lines.push(`    ${left}`);
  const forGood = Object.entries(result.unknownForGood);
  lines.push(
    `  Unknown attempts nothing settles or waits for: ${forGood.length === 0 ? 'none' : forGood.map(([k, n]) => `${k} ${n}`).join(', ')}`,
  );

  section('Audit (sandlot audit --json):');
  const report = result.audit.report;
  if (report === null) {
    lines.push(`  no report (exit ${result.audit.exitCode}): ${result.audit.stderr.trim().slice(0, 500)}`);
  } else {
    const c = report.checked;
    lines.push(
      `  exit ${result.audit.exitCode}; checked ${c.environments} environments, ${c.journalRows} journal rows, ` +
        `${c.leases} leases, ${c.cleanups} cleanup records, ${c.resources} live resources (${report.inventory})`,
    );
    for (const [name, n] of Object.entries(report.counts)) lines.push(`  ${pad(name, 24)} ${n}`);
    lines.push(
      `  expected unresolved: ${report.expectedUnresolved.attempts.length} attempts, ` +
        `${report.expectedUnresolved.cleanupClaims.length} cleanup claims`,
      `  ${report.total === 0 ? 'clean: no findings' : `${report.total} findings`}`,
    );
  }

  section("Over the whole run (the provider's record of when each resource existed):");
  const { timeline, releasedWhileLive, volumeDoubleMounted } = result.verdict;
  lines.push(
    `  ${timeline.resources} resource lifetimes against the Released moments of ${timeline.releasedEnvironments} Environments`,
    `  ${pad('released-while-live', 24)} ${releasedWhileLive.length}`,
    `  ${pad('volume-double-mounted', 24)} ${volumeDoubleMounted.length}`,
  );

  section(`Findings (${result.findings.length}):`);
  if (result.findings.length === 0) lines.push('  none');
  const byKind = new Map<string, number>();
  for (const f of result.findings) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  for (const [kind, n] of byKind) lines.push(`  ${pad(kind, 36)} ${n}`);
  for (const f of result.findings.slice(0, 40)) {
    lines.push(
      `  +${s(f.atMs)} ${f.kind}${f.environmentId === undefined ? '' : ` ${f.environmentId}`}: ${f.detail.slice(0, 400)}`,
    );
  }
  if (result.findings.length > 40) lines.push(`  … ${result.findings.length - 40} more in the JSON results`);
  const failed = result.environments.filter((e) => e.outcome === 'failed');
  for (const e of failed.slice(0, 5)) {
    lines.push(`  trace of ${e.key} (${e.environmentId ?? 'never registered'}): ${e.failure ?? ''}`);
    for (const step of e.trace.slice(-25)) lines.push(`    ${step}`);
  }

  lines.push('');
  if (resultsPath !== null) lines.push(`results: ${resultsPath}`);
  lines.push(result.ok ? 'logs: removed (the run was clean)' : `logs and fault records: ${result.runDir}`);
  lines.push(totalsLine(result));
  return lines.join('\n');
}
