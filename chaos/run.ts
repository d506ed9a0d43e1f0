// `npm run chaos [-- options]`: the multi-process chaos run (chaos/harness.ts), its report on stdout
// (progress lines on stderr), its results as JSON in chaos/results/. Exit code 0 only when nothing
// was lost, orphaned or duplicated, the audit is clean and the run found nothing else; 1 otherwise;
// 2 for a usage mistake. Never part of `npm test` (test/chaos/chaos-smoke.test.ts is the small one).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from '../test/support/chaos-worker.ts';
import { killEverything } from './cleanup.ts';
import { runChaos, writeResult } from './harness.ts';
import { parseChaosArgs, usage, type ChaosOptions } from './options.ts';
import { formatReport } from './report.ts';

let options: ChaosOptions | 'help';
try {
  options = parseChaosArgs(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`chaos: ${error instanceof Error ? error.message : String(error)}\n\n${usage}`);
  process.exit(2);
}
if (options === 'help') {
  process.stdout.write(usage);
  process.exit(0);
}

// Ctrl-C: no process of the run may outlive it (the run directory stays, for its logs).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`chaos: ${signal}, stopping every process of the run\n`);
    killEverything();
    process.exit(130);
  });
}

const result = await runChaos(options, { print: (line) => process.stderr.write(`${line}\n`) });
if ('skipped' in result) {
  process.stderr.write(`chaos: cannot run: ${result.skipped}\n`);
  process.exit(1);
}
const path =
  options.resultsDir === null ? null : await writeResult(result, join(repoRoot, options.resultsDir));
if (result.ok) await rm(result.runDir, { recursive: true, force: true });
process.stdout.write(`${formatReport(result, path)}\n`);
process.exit(result.ok ? 0 : 1);
