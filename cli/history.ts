// `sandlot history <environmentId>`: an Environment's journal as a table, one line per committed
// revision: when, which event, where it came from, the states before and after, and the fences the
// event carried. `--json` prints the same rows as one JSON array (events show only their visible
// fields, as on the journal route: never provider options, selections or receipts).
import { visibleEvent } from '../actors/journal.ts';
import { environmentMachine } from '../machines/environment.ts';
import type { JournalEntry } from '../store/journal.ts';
import { readEnvironmentJournal } from './journal-reader.ts';
import { readJournalThroughApi, type RemoteJournalOptions, type RemoteJournalRow } from './remote-journal.ts';

export interface HistoryOptions extends RemoteJournalOptions {
  json: boolean;
}

export interface HistoryRow extends Omit<RemoteJournalRow, 'environmentId'> {
  fences: {
    lifecycleGeneration?: number;
    resourceGeneration?: number;
    providerFence?: number;
    fencingGeneration?: number;
  };
}

function fencesOf(event: unknown): HistoryRow['fences'] {
  const e = (event ?? {}) as Record<string, unknown>;
  const number = (value: unknown) => (typeof value === 'number' ? value : undefined);
  const fences: HistoryRow['fences'] = {};
  const lifecycle = number(e['expectedLifecycleGeneration']) ?? number(e['lifecycleGeneration']);
  if (lifecycle !== undefined) fences.lifecycleGeneration = lifecycle;
  for (const key of ['resourceGeneration', 'providerFence', 'fencingGeneration'] as const) {
    const value = number(e[key]);
    if (value !== undefined) fences[key] = value;
  }
  return fences;
}

export function historyRows(entries: readonly JournalEntry[]): HistoryRow[] {
  return entries.map((e) => ({
    revision: e.revision,
    recordedAt: new Date(e.recordedAt).toISOString(),
    event: visibleEvent(e.event),
    source: e.source,
    actor: e.actor,
    from: e.fromState,
    to: e.toState,
    fences: fencesOf(e.event),
  }));
}

/** The machine's regions in its own order (the journal's JSON keeps PostgreSQL's key order). */
const regions = Object.keys(environmentMachine.config.states ?? {});

/** A state value on one line: `Registered/Provisioning/Idle` by region, `a.b` when nested. */
function stateText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value !== 'object') return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  const keys = [
    ...regions.filter((key) => key in record),
    ...Object.keys(record).filter((key) => !regions.includes(key)),
  ];
  return keys
    .map((key) => {
      const inner = record[key];
      if (typeof inner !== 'object' || inner === null) return stateText(inner);
      const [child, grandchild] = Object.entries(inner as Record<string, unknown>)[0] ?? ['?', null];
      return `${child}.${stateText(grandchild)}`;
    })
    .join('/');
}

function fenceText(fences: HistoryRow['fences']): string {
  const parts: string[] = [];
  if (fences.lifecycleGeneration !== undefined) parts.push(`lg ${fences.lifecycleGeneration}`);
  if (fences.resourceGeneration !== undefined) parts.push(`rg ${fences.resourceGeneration}`);
  if (fences.providerFence !== undefined) parts.push(`pf ${fences.providerFence}`);
  if (fences.fencingGeneration !== undefined) parts.push(`fg ${fences.fencingGeneration}`);
  return parts.join(' ');
}

/** The event column: its type, and the kind of attempt for provider results. */
function eventText(event: Record<string, unknown>): string {
  const kind = typeof event['kind'] === 'string' ? ` (${event['kind']})` : '';
  return `${String(event['type'])}${kind}`;
}

export function historyTable(rows: readonly HistoryRow[]): string {
  const header = ['REV', 'TIME', 'EVENT', 'SOURCE', `STATES (${regions.join('/')}) FROM → TO`, 'FENCES'];
  const lines = rows.map((r) => [
    String(r.revision),
    r.recordedAt,
    eventText(r.event),
    r.source ?? '-',
    `${stateText(r.from)} → ${stateText(r.to)}`,
    fenceText(r.fences),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padStart(widths[0] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [format(header), ...lines.map(format)].join('\n');
}

export async function historyCommand(environmentId: string, options: HistoryOptions): Promise<void> {
  // --url reads through a running server's API, so it works beside an embedded serve.
  const rows =
    options.url === undefined
      ? historyRows(await readEnvironmentJournal(environmentId))
      : (await readJournalThroughApi(environmentId, options)).map(({ environmentId: _, ...e }) => ({
          ...e,
          fences: fencesOf(e.event),
        }));
  process.stdout.write(options.json ? `${JSON.stringify(rows, null, 2)}\n` : `${historyTable(rows)}\n`);
}
