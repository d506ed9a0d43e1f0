// The reference host's append-only journal: what it accepted, what it started, what it answered.
// Invariants: an entry is on disk (written and fsync'd) before `append` returns, and the host writes
// a started intent before any effect, so after a crash the journal says exactly which effects may
// have begun. The journal is JSON lines in one file; the directory is fsync'd when the file is
// created. Loading tolerates one thing only: an unterminated last line (a write torn by a crash;
// its append never returned, so nothing after it happened) is dropped and cut off the file before
// anything is appended. Any other malformed or inconsistent line refuses the start.
import { mkdir, open, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import {
  acceptedAt,
  type AcceptanceState,
  emptyAcceptanceState,
  recordResult,
  withAccepted,
} from './acceptance-state.ts';
import { envelopeDigest } from './envelope.ts';
import { envelopeWireSchema, firstIssue, isMutatingKind } from './envelope-schema.ts';
import { ANSWERED_REFUSAL_CODES } from './errors.ts';
import { HostJournalCorruptError, HostJournalLockedError, HostStoppedError } from './host-errors.ts';
import { hostResultWireSchema, type HostResultWire } from './host-result.ts';
import { isCanonicalInstant, SHA256_HEX_PATTERN } from './signing.ts';

export const JOURNAL_FILE = 'journal.jsonl';
/** The journal directory's lock: created exclusively, holding the owning process id. */
export const LOCK_FILE = 'host.lock';

const positive = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const id = z.string().min(1).max(256);
const sha256 = z.string().regex(SHA256_HEX_PATTERN);
const instant = z.string().refine(isCanonicalInstant, 'a canonical ISO instant');

export const journalEntrySchema = z.discriminatedUnion('type', [
  /**
   * An envelope passed verification; `wire` is the exact envelope, so replay answers it exactly.
   * `declined`: authentic and next, but refused; it consumes the sequence, raises no fence, and is
   * followed by a signed `failed` result and never by an intent.
   */
  z.strictObject({
    type: z.literal('accepted'),
    at: instant,
    sequence: positive,
    envelopeDigest: sha256,
    wire: envelopeWireSchema,
    declined: z
      .strictObject({ code: z.enum(ANSWERED_REFUSAL_CODES), message: z.string().min(1).max(1024) })
      .optional(),
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
type DeclinedCode = (typeof ANSWERED_REFUSAL_CODES)[number];

/** The document of a declined envelope's signed `failed` result. */
export function refusalDocument(declined: { code: DeclinedCode; message: string }): Record<string, unknown> {
  return { code: 'refused', refusal: declined.code, message: declined.message };
}

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
  readonly openIntents: readonly {
    sequence: number;
    operationId: string;
    environmentId: string;
    /** Whether the envelope's kind changes anything (a read's interrupted intent left nothing). */
    mutating: boolean;
  }[];
  /**
   * Sequences accepted with no intent and no result: no effect ever started. `declined` carries the
   * refusal the host had decided on, to be answered as such.
   */
  readonly notStarted: readonly {
    sequence: number;
    operationId: string;
    declined?: { code: DeclinedCode; message: string };
  }[];
  readonly quarantines: readonly Quarantine[];
}

function isRefusalOf(wire: HostResultWire, code: DeclinedCode): boolean {
  const { outcome } = wire.body;
  return (
    outcome.status === 'failed' && outcome.document.code === 'refused' && outcome.document.refusal === code
  );
}

function corrupt(line: number, message: string, cause?: unknown): HostJournalCorruptError {
  return new HostJournalCorruptError(`line ${line}: ${message}`, cause === undefined ? undefined : { cause });
}

/** Folds the entries, in order, into the host's state; an inconsistent history throws. */
export function replayJournal(entries: readonly JournalEntry[]): JournalReplay {
  let state = emptyAcceptanceState();
  const environments = new Map<number, string>();
  const declined = new Map<number, { code: DeclinedCode; message: string }>();
  const intents = new Set<number>();
  const mutating = new Set<number>();
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
        raisesFence: entry.declined === undefined && isMutatingKind(body.operation.kind),
      });
      environments.set(entry.sequence, body.lease.environmentId);
      if (isMutatingKind(body.operation.kind)) mutating.add(entry.sequence);
      if (entry.declined !== undefined) declined.set(entry.sequence, entry.declined);
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
      if (declined.has(entry.sequence)) {
        throw corrupt(line, `intent for declined sequence ${entry.sequence}`);
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
    const refusal = declined.get(entry.sequence);
    if (refusal !== undefined && !isRefusalOf(entry.wire, refusal.code)) {
      throw corrupt(line, `result of declined sequence ${entry.sequence} is not its signed refusal`);
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
      openIntents.push({
        sequence: accepted.sequence,
        operationId: accepted.operationId,
        environmentId,
        mutating: mutating.has(accepted.sequence),
      });
    } else {
      const refusal = declined.get(accepted.sequence);
      notStarted.push({
        sequence: accepted.sequence,
        operationId: accepted.operationId,
        ...(refusal === undefined ? {} : { declined: refusal }),
      });
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

/** Journal directories locked by this process: a second open in the same process is refused too. */
const heldHere = new Set<string>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as { code?: unknown }).code === 'EPERM';
  }
}

async function createLock(path: string): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(`${process.pid}\n`, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

/** A held journal directory lock; `release` removes the lock file (once). */
export interface JournalLock {
  readonly path: string;
  release(): Promise<void>;
}

/**
 * One host per journal directory. Takes `host.lock` exclusively (O_EXCL), writing this process's
 * id. A lock held in this process, or by a live process, is refused (HostJournalLockedError,
 * naming the directory); a lock whose process is gone is stale and taken over. A lock file that
 * names no process (being written, or torn) is treated as held: the operator removes it.
 */
export async function acquireJournalLock(dir: string): Promise<JournalLock> {
  const directory = resolve(dir);
  if (heldHere.has(directory)) {
    throw new HostJournalLockedError(`journal directory ${directory} is already open in this process`);
  }
  await mkdir(directory, { recursive: true });
  const path = join(directory, LOCK_FILE);
  heldHere.add(directory);
  try {
    if (!(await createLock(path))) {
      const text = await readFile(path, 'utf8').catch(() => '');
      const pid = /^\d+\n?$/.test(text) ? Number(text.trim()) : NaN;
      if (!Number.isSafeInteger(pid) || pid <= 0) {
        throw new HostJournalLockedError(
          `journal directory ${directory} has a lock file naming no process; remove ${LOCK_FILE} if no host runs`,
        );
      }
      if (pid !== process.pid && processAlive(pid)) {
        throw new HostJournalLockedError(
          `journal directory ${directory} is locked by running process ${pid}`,
        );
      }
      // Stale: its process is gone (or it is this process's, from a host never closed here).
      await unlink(path).catch((error: unknown) => {
        if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
      });
      if (!(await createLock(path))) {
        throw new HostJournalLockedError(`journal directory ${directory} was locked by another process`);
      }
    }
    await syncDirectory(directory);
  } catch (error) {
    heldHere.delete(directory);
    throw error;
  }
  let released = false;
  return {
    path,
    async release() {
      if (released) return;
      released = true;
      try {
        await unlink(path);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
      } finally {
        heldHere.delete(directory);
      }
    },
  };
}
