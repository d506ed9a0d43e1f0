// The reference host's public shapes: its port to the control plane, its options, and what it
// reports about itself (a poll's counts, its health, the envelopes it refused without an answer).
import type { EnvelopeRefusalCode } from './errors.ts';
import type { HostEffects } from './host-effects.ts';
import type { Quarantine } from './host-journal.ts';
import type { HostResultWire, HostSigner } from './host-result.ts';
import type { VerificationTrust } from './trust.ts';

/** The host's side of the control channel (the mTLS client implements it; tests use memory). */
export interface ControlPort {
  /** Envelopes with sequences above `after`, plus any the control plane is still waiting on. */
  fetchAssignments(after: number, signal: AbortSignal): Promise<readonly unknown[]>;
  reportResult(wire: HostResultWire, signal: AbortSignal): Promise<void>;
}

export interface ReferenceHostOptions {
  hostId: string;
  journalDir: string;
  trust: VerificationTrust;
  /** The host's result-signing key; its hostId must be this host's. */
  signer: HostSigner;
  control: ControlPort;
  effects: HostEffects;
  now: () => Date;
  /** Test hook: runs right after the started intent is on disk; a throw simulates a crash there. */
  faults?: { afterIntent?: (sequence: number) => void | Promise<void> };
}

export type HostRefusalCode = EnvelopeRefusalCode | 'result-missing';

/** A refused, unanswered envelope, kept in memory for the operator (never journaled). */
export interface HostRefusal {
  readonly sequence: number | null;
  readonly code: HostRefusalCode;
  readonly message: string;
  readonly at: string;
}

export interface StepReport {
  fetched: number;
  accepted: number;
  replayed: number;
  /** Answered with a signed refusal (journaled; the sequence is consumed, no effect ran). */
  declined: number;
  /** Not answered: not authentic, not for this host, or not the next sequence. */
  refused: number;
  reported: number;
}

export interface RunOptions {
  /** The pause between polls, in milliseconds: explicit, no default. */
  intervalMs: number;
  /** How many times one poll may be tried when the control channel is unavailable (default 5). */
  attempts?: number;
  /** The first backoff, doubled each retry up to maxBackoffMs (defaults 200 and 5,000). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

export interface HostHealth {
  /** The last poll that verified there was nothing to do (nothing fetched, nothing unreported). */
  lastHealthyPoll: string | null;
  /** The last poll that failed on the control channel, by code; null after a good poll. */
  lastPollError: { code: string; at: string } | null;
  quarantines: readonly Quarantine[];
  stopped: boolean;
}
