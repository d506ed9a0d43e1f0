// Tables over a day of lifecycles, alone (bench/lib/retention.ts says what is measured; `npm run
// bench` runs the same as one of its phases):
//   npx tsx bench/retention.ts [--rounds 24] [--per-round 50] [--keep-rounds 4] [--clients 8]
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { retentionFlat, retentionTables, runRetention, type RetentionResult } from './lib/retention.ts';

export function printRetention(
  r: RetentionResult,
  print: (line: string) => void = (line) => console.log(line),
): void {
  const rows: string[][] = [
    ['round', 'lifecycles', ...retentionTables, 'pruned: outbox', 'journal', 'attempts'],
    ...r.rounds.map((x) => [
      String(x.round),
      String(x.lifecycles),
      ...retentionTables.map((t) => String(x.rows[t])),
      String(x.pruned.outboxRows),
      String(x.pruned.journalRowsCompacted),
      String(x.pruned.attemptsCompacted),
    ]),
    [
      'rows/lifecycle, unpruned',
      '',
      ...retentionTables.map((t) => String(r.unprunedPerLifecycle[t])),
      '',
      '',
      '',
    ],
    [
      'rows/lifecycle, window full',
      '',
      ...retentionTables.map((t) => String(r.growthPerLifecycle[t])),
      '',
      '',
      '',
    ],
  ];
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  for (const row of rows) print(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  '));
  print(
    `${r.rounds.length} rounds of ${r.perRound} lifecycles, retention window ${r.keepRounds} rounds, ${r.failed} failed: ` +
      (retentionFlat(r) ? 'bounded' : 'NOT bounded'),
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '24' },
      'per-round': { type: 'string', default: '50' },
      'keep-rounds': { type: 'string', default: '4' },
      clients: { type: 'string', default: '8' },
    },
  });
  const number = (name: string, raw: string): number => {
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`--${name} must be a positive integer, not ${raw}`);
    return value;
  };
  const result = await runRetention({
    rounds: number('rounds', values.rounds),
    perRound: number('per-round', values['per-round']),
    keepRounds: number('keep-rounds', values['keep-rounds']),
    clients: number('clients', values.clients),
  });
  printRetention(result);
  if (!retentionFlat(result)) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
