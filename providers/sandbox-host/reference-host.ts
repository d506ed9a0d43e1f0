// The reference host's durable core, independent of transport: it polls a ControlPort for signed
// assignment envelopes, verifies each, and answers with host-signed results. Invariants:
// - journal before effect: an accepted envelope and its started intent are on disk (fsync'd)
//   before the effect runs, and the signed result is on disk before it is reported;
// - exact replay: an envelope already accepted, sent again byte for byte (a lost acknowledgment),
//   is answered with the journaled result and causes no second effect;
// - fail closed: an intent with no result (the host stopped in between, or the effect threw) is
//   never run again. It becomes an explicit `uncertain` result and a quarantine of its Environment,
//   and every later envelope for that Environment (listOwned aside, which reports it as uncertain)
//   is declined (`lease-quarantined`) until an operator confirms the cleanup (journaled, with who
//   and when);
// - no stall: an authentic envelope at exactly the next sequence that is declined (expired, a stale
//   fence, a quarantined lease) is journaled as accepted with a signed `failed` refusal and no
//   intent and no effect, so its sequence is consumed and replays answer it like any result. Only
//   what is not authentic or not next (a gap, an altered duplicate) stays unanswered;
// - one host per journal directory: open takes the directory's lock file, close removes it.
// - a journal write that fails stops the host (HostStoppedError): it must restart over the journal.
// The effects are simulated (host-effects.ts): no guest or VM runs. This proves the protocol only.
import { setTimeout as sleep } from 'node:timers/promises';
import { type AcceptanceState, recordResult, withAccepted } from './acceptance-state.ts';
import { isMutatingKind } from './envelope-schema.ts';
import { type EnvelopeBody, verifyEnvelope } from './envelope.ts';
import type { AnsweredRefusalCode } from './errors.ts';
import type { EffectOutcome } from './host-effects.ts';
import {
  CleanupRefusedError,
  ControlRetriesExhaustedError,
  HostMisconfiguredError,
  HostStoppedError,
  isTransientControlError,
  LeaseQuarantinedError,
} from './host-errors.ts';
import {
  acquireJournalLock,
  HostJournal,
  type JournalLock,
  type JournalReplay,
  type Quarantine,
  refusalDocument,
  replayJournal,
} from './host-journal.ts';
import { type HostResultWire, MAX_CHUNK_BYTES, type ResultStatus, signHostResult } from './host-result.ts';
import type { VerificationTrust } from './trust.ts';

import type {
  HostHealth,
  HostRefusal,
  HostRefusalCode,
  ReferenceHostOptions,
  RunOptions,
  StepReport,
} from './reference-host-types.ts';

export type * from './reference-host-types.ts';

const MAX_REFUSALS_KEPT = 100;

function chunked(parts: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    for (let i = 0; i < part.length; i += MAX_CHUNK_BYTES) out.push(part.subarray(i, i + MAX_CHUNK_BYTES));
  }
  return out;
}

function sequenceOf(wire: unknown): number | null {
  const body = (wire as { body?: { sequence?: unknown } } | null)?.body;
  const sequence = body?.sequence;
  return typeof sequence === 'number' && Number.isSafeInteger(sequence) ? sequence : null;
}

/** A copy of the envelope exactly as received, for the journal. */
function exactWire(wire: unknown): { body: EnvelopeBody; signature: string; keyVersion: number } {
  return JSON.parse(JSON.stringify(wire)) as { body: EnvelopeBody; signature: string; keyVersion: number };
}

/** Waits, resolving false instead of throwing when the signal aborts. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

export class ReferenceHost {
  private stateValue: AcceptanceState;
  private trust: VerificationTrust;
  private readonly quarantineMap = new Map<string, Quarantine>();
  private readonly pending: { sequence: number; wire: HostResultWire }[] = [];
  private readonly refusalLog: HostRefusal[] = [];
  private lastHealthyPoll: string | null = null;
  private lastPollError: { code: string; at: string } | null = null;
  private stopped: unknown = undefined;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly options: ReferenceHostOptions,
    private readonly journal: HostJournal,
    private readonly lock: JournalLock,
    replay: JournalReplay,
    /** Bytes of a torn trailing line dropped when the journal was loaded (0 when none). */
    readonly tornBytesDropped: number,
  ) {
    this.stateValue = replay.state;
    this.trust = options.trust;
    for (const q of replay.quarantines) this.quarantineMap.set(q.environmentId, q);
  }

  /** Loads the journal, then settles what a crash left open before any new envelope is taken. */
  static async open(options: ReferenceHostOptions): Promise<ReferenceHost> {
    if (options.signer.hostId !== options.hostId) {
      throw new HostMisconfiguredError('the result signer belongs to another host');
    }
    const lock = await acquireJournalLock(options.journalDir);
    let opened: Awaited<ReturnType<typeof HostJournal.open>>;
    try {
      opened = await HostJournal.open(options.journalDir);
    } catch (error) {
      await lock.release();
      throw error;
    }
    const { journal, entries, tornBytes } = opened;
    try {
      const replay = replayJournal(entries);
      const host = new ReferenceHost(options, journal, lock, replay, tornBytes);
      await host.recover(replay);
      return host;
    } catch (error) {
      await journal.close();
      await lock.release();
      throw error;
    }
  }

  get state(): AcceptanceState {
    return this.stateValue;
  }

  get quarantines(): readonly Quarantine[] {
    return [...this.quarantineMap.values()];
  }

  get refusals(): readonly HostRefusal[] {
    return [...this.refusalLog];
  }

  health(): HostHealth {
    return {
      lastHealthyPoll: this.lastHealthyPoll,
      lastPollError: this.lastPollError,
      quarantines: this.quarantines,
      stopped: this.stopped !== undefined,
    };
  }

  /** Replaces the verification trust (a rotation the enrollment store validated with replaceTrust). */
  setTrust(trust: VerificationTrust): void {
    this.trust = trust;
  }

  /** One poll: report what is unreported, fetch after the last accepted sequence, answer each. */
  step(signal: AbortSignal): Promise<StepReport> {
    return this.exclusive(async () => {
      signal.throwIfAborted();
      const report: StepReport = {
        fetched: 0,
        accepted: 0,
        replayed: 0,
        declined: 0,
        refused: 0,
        reported: 0,
      };
      await this.flushPending(signal, report);
      const wires = await this.options.control.fetchAssignments(this.stateValue.lastSequence, signal);
      report.fetched = wires.length;
      for (const wire of wires) {
        if (signal.aborted) break;
        await this.handle(wire, signal, report);
      }
      if (wires.length === 0 && this.pending.length === 0) this.lastHealthyPoll = this.nowIso();
      this.lastPollError = null;
      return report;
    });
  }

  /**
   * Polls every `intervalMs` until the signal aborts (then resolves). A transient control failure
   * is retried with doubling backoff up to `attempts` tries per poll, then ControlRetriesExhausted;
   * any other failure (a refusal from the channel, a stopped journal) is thrown at once.
   */
  async run(signal: AbortSignal, options: RunOptions): Promise<void> {
    const { intervalMs, attempts = 5, initialBackoffMs = 200, maxBackoffMs = 5_000 } = options;
    if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) {
      throw new RangeError('intervalMs must be a positive integer');
    }
    if (!Number.isSafeInteger(attempts) || attempts < 1) throw new RangeError('attempts must be ≥ 1');
    while (!signal.aborted) {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.step(signal);
          break;
        } catch (error) {
          if (signal.aborted) return;
          if (!isTransientControlError(error)) throw error;
          const code = (error as { code?: unknown }).code;
          this.lastPollError = { code: typeof code === 'string' ? code : 'unknown', at: this.nowIso() };
          if (attempt >= attempts) throw new ControlRetriesExhaustedError(attempt, { cause: error });
          const backoff = Math.min(maxBackoffMs, initialBackoffMs * 2 ** (attempt - 1));
          if (!(await pause(backoff, signal))) return;
        }
      }
      if (!(await pause(intervalMs, signal))) return;
    }
  }

  /**
   * An operator confirms that the quarantined operation's resources are cleaned up. Journaled
   * (who, when) before the quarantine lifts; from then on envelopes for the Environment proceed.
   */
  confirmCleanup(operationId: string, operator: string): Promise<Quarantine> {
    return this.exclusive(async () => {
      if (operator.trim() === '') throw new CleanupRefusedError('the operator must be named');
      const held = this.quarantines.find((q) => q.operationId === operationId);
      if (held === undefined) throw new CleanupRefusedError(`operation ${operationId} is not quarantined`);
      await this.durably(() =>
        this.journal.append({
          type: 'cleanup',
          at: this.nowIso(),
          sequence: held.sequence,
          operationId,
          environmentId: held.environmentId,
          operator,
        }),
      );
      this.quarantineMap.delete(held.environmentId);
      return held;
    });
  }

  /** Waits for the work in hand, closes the journal and removes the directory's lock. */
  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    try {
      await this.journal.close();
    } finally {
      await this.lock.release();
    }
  }

  // ---- inside ----

  private nowIso(): string {
    return this.options.now().toISOString();
  }

  /** Steps and cleanups never interleave: each sees the state the previous one left. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(() => {
      if (this.stopped !== undefined) {
        throw new HostStoppedError('an earlier durability failure stopped it', { cause: this.stopped });
      }
      return work();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Runs a durable step; any failure there stops the host (its memory may be ahead of its disk). */
  private async durably<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.stopped = error;
      throw error;
    }
  }

  private refuse(sequence: number | null, code: HostRefusalCode, message: string, report: StepReport) {
    this.refusalLog.push({ sequence, code, message, at: this.nowIso() });
    if (this.refusalLog.length > MAX_REFUSALS_KEPT) this.refusalLog.shift();
    report.refused++;
  }

  private async handle(wire: unknown, signal: AbortSignal, report: StepReport): Promise<void> {
    const { hostId } = this.options;
    const verdict = verifyEnvelope(wire, this.trust, { hostId, state: this.stateValue }, this.options.now());
    if (verdict.verdict === 'refused') {
      this.refuse(sequenceOf(wire), verdict.code, verdict.error.message, report);
      return;
    }
    const { body } = verdict;
    if (verdict.verdict === 'replay') {
      report.replayed++;
      if (verdict.result === null) {
        // Not reachable after recovery (every accepted sequence has a result or a quarantine).
        this.refuse(body.sequence, 'result-missing', `sequence ${body.sequence} has no result`, report);
        return;
      }
      await this.report(body.sequence, verdict.result, signal, report);
      return;
    }
    if (verdict.verdict === 'declined') {
      const declined = { code: verdict.code, message: verdict.error.message };
      const result = await this.durably(() =>
        this.decline(body, verdict.envelopeDigest, verdict.state, wire, declined),
      );
      report.declined++;
      await this.report(body.sequence, result, signal, report);
      return;
    }
    // listOwned names no lease (its Environment is a placeholder) and lists quarantines as uncertain.
    const held =
      body.operation.kind === 'listOwned' ? undefined : this.quarantineMap.get(body.lease.environmentId);
    if (held !== undefined) {
      const error = new LeaseQuarantinedError(
        `environment ${body.lease.environmentId} is held by uncertain operation ${held.operationId} until an operator confirms cleanup`,
      );
      // Authentic and next: the sequence is consumed with a signed refusal, and no fence moves.
      const next = withAccepted(this.stateValue, {
        envelopeDigest: verdict.envelopeDigest,
        operationId: body.operation.id,
        environmentId: body.lease.environmentId,
        providerFence: body.fence.providerFence,
        raisesFence: false,
      });
      const declined = { code: 'lease-quarantined' as const, message: error.message };
      const result = await this.durably(() =>
        this.decline(body, verdict.envelopeDigest, next, wire, declined),
      );
      report.declined++;
      await this.report(body.sequence, result, signal, report);
      return;
    }
    const result = await this.durably(() => this.accept(body, verdict.envelopeDigest, verdict.state, wire));
    report.accepted++;
    await this.report(body.sequence, result, signal, report);
  }

  /** The exact envelope on disk as accepted (declined, when answered with a refusal), then in memory. */
  private async journalAccepted(
    sequence: number,
    digest: string,
    next: AcceptanceState,
    wire: unknown,
    declined?: { code: AnsweredRefusalCode; message: string },
  ): Promise<void> {
    await this.journal.append({
      type: 'accepted',
      at: this.nowIso(),
      sequence,
      envelopeDigest: digest,
      wire: exactWire(wire),
      ...(declined === undefined ? {} : { declined }),
    });
    this.stateValue = next;
  }

  /** Accepted (declined) → signed `failed` refusal, each journaled; no intent, no effect. */
  private async decline(
    body: EnvelopeBody,
    digest: string,
    next: AcceptanceState,
    wire: unknown,
    declined: { code: AnsweredRefusalCode; message: string },
  ): Promise<HostResultWire> {
    const { sequence } = body;
    await this.journalAccepted(sequence, digest, next, wire, declined);
    const result = this.sign(body.operation.id, digest, 'failed', refusalDocument(declined));
    await this.journal.append({ type: 'result', at: this.nowIso(), sequence, wire: result });
    this.stateValue = recordResult(this.stateValue, sequence, result);
    return result;
  }

  /** Accepted → intent → effect → signed result, each journaled before the next begins. */
  private async accept(
    body: EnvelopeBody,
    digest: string,
    next: AcceptanceState,
    wire: unknown,
  ): Promise<HostResultWire> {
    const { sequence } = body;
    await this.journalAccepted(sequence, digest, next, wire);
    await this.journal.append({
      type: 'intent',
      at: this.nowIso(),
      sequence,
      operationId: body.operation.id,
      envelopeDigest: digest,
    });
    await this.options.faults?.afterIntent?.(sequence);
    let outcome: EffectOutcome;
    try {
      outcome = await this.effect(body);
    } catch {
      // A read that failed changed nothing; a mutation may have run partly: its outcome is unknown,
      // so it is quarantined, not retried.
      if (!isMutatingKind(body.operation.kind))
        return this.interruptedRead(sequence, body.operation.id, digest);
      return this.quarantine(sequence, body.operation.id, body.lease.environmentId, digest, 'effect-failed');
    }
    const result = this.sign(body.operation.id, digest, outcome.status, outcome.document, outcome);
    await this.journal.append({ type: 'result', at: this.nowIso(), sequence, wire: result });
    this.stateValue = recordResult(this.stateValue, sequence, result);
    return result;
  }

  private async effect(body: EnvelopeBody): Promise<EffectOutcome> {
    const { effects } = this.options;
    switch (body.operation.kind) {
      case 'provision':
        return effects.provision(body);
      case 'renew':
        return effects.renew(body);
      case 'describe':
        return effects.describe(body);
      case 'release':
        return effects.release(body);
      case 'listOwned': {
        // A quarantined Environment is listed as uncertain, never as absent.
        const outcome = await effects.listOwned(body);
        const uncertain = this.quarantines.map((q) => ({
          environmentId: q.environmentId,
          operationId: q.operationId,
        }));
        return { ...outcome, document: { ...outcome.document, uncertain } };
      }
    }
  }

  private sign(
    operationId: string,
    envelopeDigest: string,
    status: ResultStatus,
    document: Record<string, unknown>,
    output: { stdout: readonly Uint8Array[]; stderr: readonly Uint8Array[] } = { stdout: [], stderr: [] },
  ): HostResultWire {
    return signHostResult(
      {
        operationId,
        envelopeDigest,
        status,
        document,
        stdout: chunked(output.stdout),
        stderr: chunked(output.stderr),
        completedAt: this.options.now(),
      },
      this.options.signer,
    );
  }

  /** Journals the `uncertain` result and holds the Environment; the effect is never run again. */
  private async quarantine(
    sequence: number,
    operationId: string,
    environmentId: string,
    digest: string,
    reason: 'intent-without-result' | 'effect-failed',
  ): Promise<HostResultWire> {
    const result = this.sign(operationId, digest, 'uncertain', {
      code: 'quarantined',
      reason,
      environmentId,
      clearedBy: 'operator-confirmed cleanup',
    });
    const at = this.nowIso();
    await this.journal.append({
      type: 'quarantined',
      at,
      sequence,
      operationId,
      environmentId,
      wire: result,
    });
    this.stateValue = recordResult(this.stateValue, sequence, result);
    this.quarantineMap.set(environmentId, { sequence, operationId, environmentId, since: at });
    return result;
  }

  /** Journals a certain `failed` answer for a read that did not finish: nothing changed, nothing held. */
  private async interruptedRead(
    sequence: number,
    operationId: string,
    digest: string,
  ): Promise<HostResultWire> {
    const result = this.sign(operationId, digest, 'failed', { code: 'interrupted-read' });
    await this.journal.append({ type: 'result', at: this.nowIso(), sequence, wire: result });
    this.stateValue = recordResult(this.stateValue, sequence, result);
    return result;
  }

  /**
   * After a restart: an open mutation becomes a quarantine, an open read an interrupted read, and an
   * unstarted acceptance a definite failure.
   */
  private async recover(replay: JournalReplay): Promise<void> {
    for (const open of replay.openIntents) {
      const digest = this.stateValue.accepted[open.sequence - 1]?.envelopeDigest ?? '';
      // A read changes nothing, so an interrupted one has nothing to clean up: it is answered as
      // interrupted (certain: no effect) and holds nothing. Only a mutation is quarantined.
      const result = open.mutating
        ? await this.durably(() =>
            this.quarantine(
              open.sequence,
              open.operationId,
              open.environmentId,
              digest,
              'intent-without-result',
            ),
          )
        : await this.durably(() => this.interruptedRead(open.sequence, open.operationId, digest));
      this.pending.push({ sequence: open.sequence, wire: result });
    }
    for (const idle of replay.notStarted) {
      const digest = this.stateValue.accepted[idle.sequence - 1]?.envelopeDigest ?? '';
      // No intent was journaled, so no effect began: the answer is a certain "not started", or the
      // refusal the host had already decided on for a declined envelope.
      const document = idle.declined === undefined ? { code: 'not-started' } : refusalDocument(idle.declined);
      const result = this.sign(idle.operationId, digest, 'failed', document);
      await this.durably(() =>
        this.journal.append({ type: 'result', at: this.nowIso(), sequence: idle.sequence, wire: result }),
      );
      this.stateValue = recordResult(this.stateValue, idle.sequence, result);
      this.pending.push({ sequence: idle.sequence, wire: result });
    }
  }

  private async report(
    sequence: number,
    wire: HostResultWire,
    signal: AbortSignal,
    report: StepReport,
  ): Promise<void> {
    try {
      await this.options.control.reportResult(wire, signal);
      report.reported++;
    } catch (error) {
      // Journaled already: kept to report first on the next poll (and replayable on request).
      if (!this.pending.some((p) => p.sequence === sequence)) this.pending.push({ sequence, wire });
      throw error;
    }
  }

  private async flushPending(signal: AbortSignal, report: StepReport): Promise<void> {
    while (this.pending.length > 0) {
      const first = this.pending[0];
      if (first === undefined) return;
      await this.options.control.reportResult(first.wire, signal);
      this.pending.shift();
      report.reported++;
    }
  }
}
