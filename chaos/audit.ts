// Runs `sandlot audit --json` as a child process against the run's database, the way an operator
// would, and reads its report. Exit code 1 with a report is an audit with findings; anything else
// without a report is a failure to audit.
import { execFile } from 'node:child_process';
import type { AuditReport } from '../actors/audit.ts';
import { repoRoot } from '../test/support/chaos-worker.ts';

export interface AuditOutcome {
  exitCode: number;
  report: AuditReport | null;
  stderr: string;
}

export function runAuditCommand(script: string, env: Record<string, string>): Promise<AuditOutcome> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [script, 'audit', '--json'],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
        maxBuffer: 256 * 1024 * 1024,
        timeout: 600_000,
      },
      (error, stdout, stderr) => {
        const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        let report: AuditReport | null = null;
        try {
          report = JSON.parse(stdout) as AuditReport;
        } catch {
          report = null;
        }
        resolve({ exitCode, report, stderr: stderr.slice(-4_000) });
      },
    );
  });
}
