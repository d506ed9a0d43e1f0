// Plain-text tables for the benchmark's report on stdout.
import type { Summary } from './stats.ts';

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map((cell) => String(cell)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export const ms = (value: number): string => (Number.isNaN(value) ? '-' : value.toFixed(value < 10 ? 1 : 0));

/** One row per series: n, p50, p95, p99, max. */
export function latencyRows(summaries: Record<string, Summary>): (string | number)[][] {
  return Object.entries(summaries).map(([name, s]) => [
    name,
    s.n,
    ms(s.p50),
    ms(s.p95),
    ms(s.p99),
    ms(s.max),
  ]);
}
