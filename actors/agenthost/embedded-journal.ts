// The embedded Host's session journal: a stand-in for the saved session journal a real Host reads
// back from Events. Its entries are the Workspace volume's flushes in data generation order (the
// turns a flush drained close at its checkpoint), read from the embedded Host's own flush table
// (migration 0016). A flush answers the boundary it closed on: its checkpoint, the upper position
// and the SHA-256 over the ordered entries up to it. A resumed Host that finds no native cache
// rebuilds to the boundary saved by the flush that produced its data generation, never a later
// one: it reads the entries again, checks them against that boundary, and reports what it rebuilt.
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { Queryable } from '../../store/db.ts';
import { journalBoundarySchema, type JournalBoundary } from './flush.ts';

interface JournalEntry {
  position: number;
  flushOperationId: string;
  checkpointId: string;
  cacheSha256: string;
}

/** What a rebuild restored to, and the source cache acknowledgment that boundary's flush saved. */
export interface RebuiltJournal {
  boundary: JournalBoundary;
  sourceCacheSha256: string;
}

export const checkpointIdOf = (flushOperationId: string): string =>
  `ckpt_${sha256Hex(`embedded-checkpoint:${flushOperationId}`).slice(0, 32)}`;

function journalDigest(entries: readonly JournalEntry[]): string {
  return sha256Hex(canonicalJson({ format: 'sandlot-embedded-journal-v1', entries }));
}

/** The entries of the flushes that advanced `volumeId` up to `dataGeneration`, in order. */
async function entriesUpTo(db: Queryable, volumeId: string, dataGeneration: number): Promise<JournalEntry[]> {
  const result = await db.query<{ flushOperationId: string; cacheSha256: string | null }>(
    `SELECT flush_operation_id AS "flushOperationId", receipt->'cache'->>'cacheSha256' AS "cacheSha256"
       FROM embedded_agenthost_flushes
      WHERE workspace_volume_id = $1 AND next_data_generation <= $2
      ORDER BY next_data_generation`,
    [volumeId, dataGeneration],
  );
  return result.rows.map((row, index) => ({
    position: index + 1,
    flushOperationId: row.flushOperationId,
    checkpointId: checkpointIdOf(row.flushOperationId),
    cacheSha256: row.cacheSha256 ?? '',
  }));
}

/** The boundary a flush of `volumeId` from `dataGeneration` closes on: the entries so far, then its own. */
export async function boundaryOfFlush(
  db: Queryable,
  volumeId: string,
  dataGeneration: number,
  flush: { flushOperationId: string; cacheSha256: string },
): Promise<JournalBoundary> {
  const entries = await entriesUpTo(db, volumeId, dataGeneration);
  const checkpointId = checkpointIdOf(flush.flushOperationId);
  entries.push({ position: entries.length + 1, checkpointId, ...flush });
  return {
    flushOperationId: flush.flushOperationId,
    checkpointId,
    upperPosition: entries.length,
    journalSha256: journalDigest(entries),
  };
}

/**
 * Rebuilds `volumeId`'s journal to the boundary saved by the flush that produced `dataGeneration`;
 * a string says why there is nothing (or nothing consistent) to rebuild from.
 */
export async function rebuildJournal(
  db: Queryable,
  volumeId: string,
  dataGeneration: number,
): Promise<RebuiltJournal | string> {
  const saved = await db.query<{ journal: unknown; cacheSha256: string | null }>(
    `SELECT receipt->'journal' AS journal, receipt->'cache'->>'cacheSha256' AS "cacheSha256"
       FROM embedded_agenthost_flushes WHERE workspace_volume_id = $1 AND next_data_generation = $2`,
    [volumeId, dataGeneration],
  );
  const row = saved.rows[0];
  if (row === undefined) return 'no flush produced this Workspace generation: there is no saved journal';
  const boundary = journalBoundarySchema.safeParse(row.journal);
  if (!boundary.success || row.cacheSha256 === null) {
    return 'the flush of this Workspace generation saved no journal boundary';
  }
  const entries = await entriesUpTo(db, volumeId, dataGeneration);
  if (
    entries.length !== boundary.data.upperPosition ||
    entries.at(-1)?.checkpointId !== boundary.data.checkpointId ||
    journalDigest(entries) !== boundary.data.journalSha256
  ) {
    return 'the saved journal does not match its boundary';
  }
  return { boundary: boundary.data, sourceCacheSha256: row.cacheSha256 };
}
