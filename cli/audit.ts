// `sandlot audit [--json]`: the live invariant check (actors/audit.ts) over the database the other
// commands open and the configured provider's actual resources. Prints a table (or one JSON
// document with --json) and fails with exit code 1 when anything was found; expected-unresolved
// attempts and cleanup claims are listed with their age but never fail it.
import type { AuditReport } from '../actors/audit.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import { configFromEnvironment, openDatabase } from './context.ts';
import { refuseWhileServing } from './journal-reader.ts';

export interface AuditCommandOptions {
  json: boolean;
}

/** The audit ran and found something (exit code 1; the report is already printed). */
export class AuditFindingsError extends Error {
  override readonly name = 'AuditFindingsError';
}

const findingTitles: Record<keyof AuditReport['findings'], string> = {
  multipleCurrentLeases: 'Environments with more than one current lease',
  orphans: 'Orphaned provider resources (no lease, no cleanup record)',
  uncoveredTerminal: 'Live resources of released or failed leases with no cleanup record',
  journalGaps: 'Journal gaps (revisions not contiguous from 1)',
  disallowedTransitions: 'Journal transitions the machine would not make',
  callsWithoutAttempt: 'Provider calls with no attempt written before them',
  workspaceConflicts: 'Late resources whose Workspace volume another lease holds',
};

/** Each finding on one line, IDs first. */
function findingLines(report: AuditReport, key: keyof AuditReport['findings']): string[] {
  const f = report.findings;
  switch (key) {
    case 'multipleCurrentLeases':
      return f.multipleCurrentLeases.map(
        (m) => `${m.environmentId}  generations ${m.resourceGenerations.join(', ')} (${m.states.join(', ')})`,
      );
    case 'orphans':
      return f.orphans.map(
        (r) => `${r.resourceId}  env ${r.environmentId}  op ${r.operationId}  fence ${r.providerFence}`,
      );
    case 'uncoveredTerminal':
      return f.uncoveredTerminal.map(
        (r) =>
          `${r.resourceId}  env ${r.environmentId}  lease ${r.resourceGeneration} ${r.leaseState}  op ${r.operationId}`,
      );
    case 'journalGaps':
      return f.journalGaps.map(
        (g) =>
          `${g.environmentId}  revision ${g.revision}  missing [${g.missing.join(', ')}]` +
          (g.extra.length > 0 ? `  extra [${g.extra.join(', ')}]` : ''),
      );
    case 'disallowedTransitions':
      return f.disallowedTransitions.map(
        (d) =>
          `${d.environmentId}  revision ${d.revision} ${d.eventType}  journaled ${JSON.stringify(d.journaled)}` +
          `  replayed ${d.replayed === null ? '(event not accepted)' : JSON.stringify(d.replayed)}`,
      );
    case 'callsWithoutAttempt':
      return f.callsWithoutAttempt.map(
        (c) =>
          `call ${c.callId}  ${c.operation}  op ${c.operationId ?? '-'}  fence ${c.providerFence ?? '-'}  at ${c.calledAt}`,
      );
    case 'workspaceConflicts':
      return f.workspaceConflicts.map(
        (w) =>
          `${w.resourceId}  env ${w.environmentId}  cleanup ${w.cleanupId} ${w.state}  lease ${w.sourceLease}` +
          `  volume ${w.volumeId} held by lease ${w.heldByLease ?? '-'}`,
      );
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

export function auditTable(report: AuditReport): string {
  const c = report.checked;
  const lines = [
    `audit at ${report.auditedAt}: provider ${report.provider} (resources by ${report.inventory}` +
      `${report.callLogChecked ? ', call log checked' : ', no call log'})`,
    `checked ${c.environments} environments, ${c.journalRows} journal rows, ${c.leases} leases, ` +
      `${c.cleanups} cleanup records, ${c.resources} live resources`,
    '',
  ];
  for (const key of Object.keys(findingTitles) as (keyof AuditReport['findings'])[]) {
    lines.push(`${String(report.counts[key]).padStart(5)}  ${findingTitles[key]}`);
    for (const line of findingLines(report, key)) lines.push(`         ${line}`);
  }
  const { attempts, cleanupClaims } = report.expectedUnresolved;
  lines.push(
    '',
    `expected unresolved (not findings): ${attempts.length} attempts past their deadline, ` +
      `${cleanupClaims.length} cleanup claims past their expiry`,
  );
  for (const a of attempts) {
    lines.push(
      `         attempt ${a.attemptId}  ${a.kind} ${a.state}  env ${a.environmentId}  overdue ${seconds(a.ageMs)}`,
    );
  }
  for (const k of cleanupClaims) {
    lines.push(
      `         cleanup ${k.cleanupId}  ${k.resourceId}  env ${k.environmentId}  expired ${seconds(k.ageMs)}`,
    );
  }
  lines.push(
    '',
    report.total === 0 ? 'clean: no findings' : `${report.total} finding${report.total === 1 ? '' : 's'}`,
  );
  return lines.join('\n');
}

export async function auditCommand(options: AuditCommandOptions): Promise<void> {
  const config = configFromEnvironment();
  await refuseWhileServing(config);
  const db = await openDatabase(config);
  let provider: (SandboxProvider & { close?(): Promise<void> }) | null = null;
  try {
    const [{ runAudit }, { hasSimulatedCallLog }] = await Promise.all([
      import('../actors/audit.ts'),
      import('../store/audit-queries.ts'),
    ]);
    let callLog = false;
    if (config.provider.id === 'agent-sandbox') {
      // The fake Kubernetes API's request log is in memory: the audit cannot see it.
      const { createAgentSandbox } = await import('../providers/agent-sandbox/create-provider.ts');
      provider = createAgentSandbox(process.env).provider;
    } else if (config.provider.id === 'sandbox-host') {
      // Every enrolled host is asked through listOwned; a silent host fails the audit, never hides.
      const [{ loadSandboxHostSettings }, { SandboxHostProvider }] = await Promise.all([
        import('../providers/sandbox-host/settings.ts'),
        import('../providers/sandbox-host/provider.ts'),
      ]);
      const { signer } = loadSandboxHostSettings(process.env);
      provider = new SandboxHostProvider({ db, signer, optionsRevision: config.provider.optionsRevision });
    } else {
      const { SimulatedProvider } = await import('../providers/simulated/simulated-provider.ts');
      provider = new SimulatedProvider({ db, optionsRevision: config.provider.optionsRevision });
      callLog = await hasSimulatedCallLog(db);
    }
    const report = await runAudit({ db, provider, callLog });
    process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${auditTable(report)}\n`);
    if (report.total > 0) {
      throw new AuditFindingsError(`${report.total} finding${report.total === 1 ? '' : 's'}`);
    }
  } finally {
    await provider?.close?.();
    await db.close();
  }
}
