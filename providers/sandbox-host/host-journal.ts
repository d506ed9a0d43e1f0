// The reference host's append-only journal: what it accepted, what it started, what it answered.
// Invariants: an entry is on disk (written and fsync'd) before `append` returns, and the host writes
// a started intent before any effect, so after a crash the journal says exactly which effects may
// have begun. The journal is JSON lines in one file; the directory is fsync'd when the file is
// created. Loading tolerates one thing only: an unterminated last line (a write torn by a crash;
// its append never returned, so nothing after it happened) is dropped and cut off the file before
// anything is appended. Any other malformed or inconsistent line refuses the start.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import {
  acceptedAt,
  type AcceptanceState,
  emptyAcceptanceState,
  recordResult,
  withAccepted,
} from './acceptance-state.ts';
import { envelopeDigest } from './envelope.ts';
import { envelopeWireSchema, firstIssue } from './envelope-schema.ts';
import { HostJournalCorruptError, HostStoppedError } from './host-errors.ts';
import { hostResultWireSchema, type HostResultWire } from './host-result.ts';
import { isCanonicalInstant, SHA256_HEX_PATTERN } from './signing.ts';

export const JOURNAL_FILE = 'journal.jsonl';

const positive = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const id = z.string().min(1).max(256);
const sha256 = z.string().regex(SHA256_HEX_PATTERN);
const instant = z.string().refine(isCanonicalInstant, 'a canonical ISO instant');

export const journalEntrySchema = z.discriminatedUnion('type', [
  /** An envelope passed verification; `wire` is the exact envelope, so replay answers it exactly. */
  z.strictObject({
    type: z.literal('accepted'),
    at: instant,
    sequence: positive,
    envelopeDigest: sha256,
    wire: envelopeWireSchema,
  }),
  /** Written before the effect starts: from here until a result, the outcome is uncertain. */
  z.strictObject({
    type: z.literal('intent'),
    at: instant,
    sequence: positive,
    operationId: id,
    envelopeDigest: sha256,
  }),
  /** The signed result the host reports (and reports again on an exact replay). */
  z.strictObject({ type: z.literal('result'), at: instant, sequence: positive, wire: hostResultWireSchema }),
  /** An intent found without a result: the signed `uncertain` result, and the Environment held. */
  z.strictObject({
    type: z.literal('quarantined'),
    at: instant,
    sequence: positive,
    operationId: id,
    environmentId: id,
    wire: hostResultWireSchema,
  }),
  /** An operator confirmed the quarantined operation's resources are cleaned up. */
  z.strictObject({
    type: z.literal('cleanup'),
    at: instant,
    sequence: positive,
    operationId: id,
    environmentId: id,
    operator: id,
  }),
]);
export type JournalEntry = z.infer<typeof journalEntrySchema>;

/** A quarantine in force: the uncertain operation and the Environment it holds. */
export interface Quarantine {
  readonly sequence: number;
  readonly operationId: string;
  readonly environmentId: string;
  readonly since: string;
}

/** What the journal says, rebuilt: the acceptance state and what is still open. */
export interface JournalReplay {
  readonly state: AcceptanceState;
  /** Sequences with a started intent and neither a result nor a quarantine: outcome unknown. */
  readonly openIntents: readonly { sequence: number; operationId: string; environmentId: string }[];
  /** Sequences accepted with no intent and no result: no effect ever started. */
  readonly notStarted: readonly { sequence: number; operationId: string }[];
  readonly quarantines: readonly Quarantine[];
}

function corrupt(line: number, message: string, cause?: unknown): HostJournalCorruptError {
  return new HostJournalCorruptError(`line ${line}: ${message}`, cause === undefined ? undefined : { cause });
}

/** Folds the entries, in order, into the host's state; an inconsistent history throws. */
export function replayJournal(entries: readonly JournalEntry[]): JournalReplay {
  let state = emptyAcceptanceState();
  const environments = new Map<number, string>();
  const intents = new Set<number>();
  const quarantines = new Map<string, Quarantine>();
  entries.forEach((entry, i) => {
    const line = i + 1;
    const prior = acceptedAt(state, entry.sequence);
    if (entry.type === 'accepted') {
      const { body } = entry.wire;
      if (entry.sequence !== state.lastSequence + 1 || body.sequence !== entry.sequence) {
        throw corrupt(line, `accepted sequence ${entry.sequence} where ${state.lastSequence + 1} was due`);
      }
      if (envelopeDigest(entry.wire) !== entry.envelopeDigest) {
        throw corrupt(line, `envelope digest of sequence ${entry.sequence} does not match its wire`);
      }
      state = withAccepted(state, {
        envelopeDigest: entry.envelopeDigest,
        operationId: body.operation.id,
        environmentId: body.lease.environmentId,
        providerFence: body.fence.providerFence,
      });
      environments.set(entry.sequence, body.lease.environmentId);
      return;
    }
    if (prior === undefined) throw corrupt(line, `${entry.type} for unaccepted sequence ${entry.sequence}`);
    if (entry.type === 'intent') {
      if (entry.envelopeDigest !== prior.envelopeDigest || entry.operationId !== prior.operationId) {
        throw corrupt(line, `intent does not match accepted sequence ${entry.sequence}`);
      }
      if (intents.has(entry.sequence) || prior.result !== null) {
        throw corrupt(line, `second intent for sequence ${entry.sequence}`);
      }
      intents.add(entry.sequence);
      return;
    }
    if (entry.type === 'cleanup') {
      const held = quarantines.get(entry.environmentId);
      if (held?.operationId !== entry.operationId || held.sequence !== entry.sequence) {
        throw corrupt(line, `cleanup of operation ${entry.operationId} which is not quarantined`);
      }
      quarantines.delete(entry.environmentId);
      return;
    }
    if (entry.type === 'quarantined') {
      if (!intents.has(entry.sequence) || prior.result !== null) {
        throw corrupt(line, `quarantine of sequence ${entry.sequence} without an open intent`);
      }
      if (entry.wire.body.outcome.status !== 'uncertain') {
        throw corrupt(line, `quarantine of sequence ${entry.sequence} carries a certain result`);
      }
      const environmentId = environments.get(entry.sequence);
      if (entry.environmentId !== environmentId || entry.operationId !== prior.operationId) {
        throw corrupt(line, `quarantine does not match accepted sequence ${entry.sequence}`);
      }
      quarantines.set(entry.environmentId, {
        sequence: entry.sequence,
        operationId: entry.operationId,
        environmentId: entry.environmentId,
        since: entry.at,
      });
    }
    try {
      state = recordResult(state, entry.sequence, entry.wire);
    } catch (error) {
      throw corrupt(line, `result for sequence ${entry.sequence} refused`, error);
    }
  });
  const openIntents = [];
  const notStarted = [];
  for (const accepted of state.accepted) {
    if (accepted.result !== null) continue;
    if (intents.has(accepted.sequence)) {
      const environmentId = environments.get(accepted.sequence) ?? '';
      openIntents.push({ sequence: accepted.sequence, operationId: accepted.operationId, environmentId });
    } else {
      notStarted.push({ sequence: accepted.sequence, operationId: accepted.operationId });
    }
  }
  return { state, openIntents, notStarted, quarantines: [...quarantines.values()] };
}

/** Parses the journal's text: complete lines must all be valid; an unterminated tail is torn. */
export function parseJournalText(text: string): { entries: JournalEntry[]; tornBytes: number } {
  const end = text.lastIndexOf('\n') + 1;
  const tornBytes = Buffer.byteLength(text.slice(end), 'utf8');
  const lines = text.slice(0, end).split('\n').slice(0, -1);
  const entries = lines.map((text, i) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw corrupt(i + 1, 'not JSON', error);
    }
    const parsed = journalEntrySchema.safeParse(value);
    if (!parsed.success) throw corrupt(i + 1, firstIssue(parsed.error));
    return parsed.data;
  });
  return { entries, tornBytes };
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The open journal: appends are serialized, each written and fsync'd before it resolves. */
export class HostJournal {
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown = undefined;

  private constructor(private readonly handle: FileHandle) {}

  /**
   * Opens (creating the directory and the file if needed, both fsync'd) and loads the journal.
   * A torn tail is cut off the file (and the cut fsync'd) so the next append starts a clean line.
   */
  static async open(
    dir: string,
  ): Promise<{ journal: HostJournal; entries: JournalEntry[]; tornBytes: number }> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, JOURNAL_FILE);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
      handle = await open(path, 'wx+');
      await handle.sync();
      await syncDirectory(dir);
    }
    try {
      const bytes = await handle.readFile();
      const { entries, tornBytes } = parseJournalText(bytes.toString('utf8'));
      if (tornBytes > 0) {
        await handle.truncate(bytes.length - tornBytes);
        await handle.sync();
      }
      return { journal: new HostJournal(handle), entries, tornBytes };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Appends one entry; resolves only once it is on disk. After a failed write every append fails. */
  append(entry: JournalEntry): Promise<void> {
    const line = `${JSON.stringify(journalEntrySchema.parse(entry))}\n`;
    const next = this.tail.then(async () => {
      if (this.failure !== undefined) {
        throw new HostStoppedError('an earlier journal write failed', { cause: this.failure });
      }
      try {
        const stat = await this.handle.stat();
        await this.handle.write(line, stat.size, 'utf8');
        await this.handle.sync();
      } catch (error) {
        this.failure = error;
        throw new HostStoppedError('a journal write failed', { cause: error });
      }
    });
    this.tail = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.tail;
    await this.handle.close();
  }
}

/** The signed result recorded for a sequence, if the state has one. */
export function savedResult(state: AcceptanceState, sequence: number): HostResultWire | null {
  return acceptedAt(state, sequence)?.result ?? null;
}
