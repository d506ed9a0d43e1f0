// Observation at scale, alone (bench/lib/observe.ts says what is measured; `npm run bench` runs the
// same as one of its phases):
//   npx tsx bench/observe.ts [--leases 10000] [--finish 100] [--window-s 60] [--timeout-s 60]
//                            [--clients 32] [--no-feed] [--compare]
// --compare runs it twice in one sitting, with the change feed and without it (passes only).
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { runObservation, type ObservationResult } from './lib/observe.ts';

export function printObservation(
  results: ObservationResult[],
  print: (line: string) => void = (line) => console.log(line),
): void {
  const rows: [string, ...string[]][] = [
    ['change feed', ...results.map((r) => (r.feed ? 'on' : 'off'))],
    ['Active leases', ...results.map((r) => String(r.leases))],
    ['fill, s', ...results.map((r) => String(r.fillSeconds))],
    ['steady window, s', ...results.map((r) => String(r.steady.windowS))],
    [
      'CPU s/min per 1k leases: API + workers',
      ...results.map((r) => String(r.steady.cpuSecondsPerMinPer1000.engine)),
    ],
    [
      'CPU s/min per 1k leases: PostgreSQL',
      ...results.map((r) => String(r.steady.cpuSecondsPerMinPer1000.postgres)),
    ],
    ['write tx/min per 1k leases', ...results.map((r) => String(r.steady.writeTransactionsPerMinPer1000))],
    ['rows written/min per 1k leases', ...results.map((r) => String(r.steady.rowsWrittenPerMinPer1000))],
    ['describes/min per 1k leases', ...results.map((r) => String(r.steady.describesPerMinPer1000))],
    ['finished sandboxes retired', ...results.map((r) => `${r.retirement.retired}/${r.retirement.finished}`)],
    ...(['p50', 'p99', 'max'] as const).map((p): [string, ...string[]] => [
      `finish → Released ${p}, ms`,
      ...results.map((r) =>
        r.retirement.retireMs === null
          ? `none in ${r.retirement.timeoutS} s`
          : r.retirement.retired < r.retirement.finished && p !== 'p50'
            ? `> ${r.retirement.timeoutS} s`
            : String(r.retirement.retireMs[p]),
      ),
    ]),
  ];
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  for (const row of rows) print(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  '));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      leases: { type: 'string', default: '10000' },
      finish: { type: 'string', default: '100' },
      'window-s': { type: 'string', default: '60' },
      'timeout-s': { type: 'string', default: '60' },
      clients: { type: 'string', default: '32' },
      'no-feed': { type: 'boolean', default: false },
      compare: { type: 'boolean', default: false },
    },
  });
  const number = (name: string, raw: string): number => {
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`--${name} must be a positive integer, got ${raw}`);
    return value;
  };
  const common = {
    leases: number('leases', values.leases),
    finish: number('finish', values.finish),
    windowS: number('window-s', values['window-s']),
    retireTimeoutS: number('timeout-s', values['timeout-s']),
    clients: number('clients', values.clients),
  };
  const feeds = values.compare ? [true, false] : [!values['no-feed']];
  const results: ObservationResult[] = [];
  for (const feed of feeds) results.push(await runObservation({ ...common, feed }));
  printObservation(results);
  console.log(JSON.stringify(results));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
