// The simulated provider's change feed (ProviderChangeFeed): a poll of simulated_resources by change
// number (migration 0006), one indexed read per period. A change number is taken when a row is
// written, not when its transaction commits, so a lower number can appear after a higher one was
// read: the follower keeps re-reading every row written within the settle window and moves its
// cursor only past settled rows, and a row it has already reported at the same number is not
// reported again. Something later than the window (a transaction held open longer) can still be
// missed; the observer's full pass is what finds that.
import type { Database } from '../../store/db.ts';
import { lastSimulatedChange, simulatedChangesAfter } from '../../store/simulated-resources.ts';
import { pause } from '../../lib/pause.ts';

export interface ChangeFeedSettings {
  /** Pause between two reads (default 200 ms). */
  pollMs: number;
  /** How long after its write a change number is taken as final (default 5 s). */
  settleMs: number;
  /** Rows per read (default 1000). */
  batch: number;
}

export const defaultChangeFeed: ChangeFeedSettings = { pollMs: 200, settleMs: 5_000, batch: 1_000 };

export async function followSimulatedChanges(
  db: Database,
  settings: ChangeFeedSettings,
  onChange: (resourceIds: string[]) => void,
  options: { signal: AbortSignal; onError?: (error: unknown) => void },
): Promise<void> {
  const { signal } = options;
  let cursor: number | null = null;
  // Rows above the cursor already reported, with the number they were reported at.
  const reported = new Map<string, number>();
  while (!signal.aborted) {
    try {
      cursor ??= await lastSimulatedChange(db);
      const rows = await simulatedChangesAfter(db, cursor, settings.settleMs, settings.batch);
      const changed = rows.filter((row) => reported.get(row.resourceId) !== row.changeSeq);
      for (const row of changed) reported.set(row.resourceId, row.changeSeq);
      let settledThrough: number = cursor;
      for (const row of rows) {
        if (!row.settled) break;
        settledThrough = row.changeSeq;
      }
      if (settledThrough !== cursor) {
        cursor = settledThrough;
        for (const [id, seq] of reported) if (seq <= settledThrough) reported.delete(id);
      }
      if (changed.length > 0) onChange(changed.map((row) => row.resourceId));
      // A full batch of settled rows: more are waiting, read on at once.
      if (rows.length === settings.batch && settledThrough === rows[rows.length - 1]?.changeSeq) continue;
    } catch (error) {
      options.onError?.(error);
      await pause(Math.max(1_000, settings.pollMs), signal);
      continue;
    }
    await pause(settings.pollMs, signal);
  }
}
