// The reference host's own failures, apart from the envelope and result refusals in errors.ts.
// Two are about the host's durability and stop it (a journal it cannot trust, a write it could not
// make): the host fails closed rather than guess. One is a refusal the host adds on top of envelope
// verification (a lease in quarantine). Which control-channel errors are worth retrying is decided
// in exactly one place, `isTransientControlError`, by code and name (errors cross processes).
// Messages name sequences, operation ids and line numbers, never envelope documents or keys.
import { SandlotError } from '../../lib/errors.ts';

/** The journal cannot be read back as a consistent history; the host refuses to start over it. */
export class HostJournalCorruptError extends SandlotError {
  readonly code = 'host-journal-corrupt';
  readonly status = 500;
  readonly title = 'Host journal corrupt';

  constructor(message: string, options?: { cause?: unknown }) {
    super(`host journal corrupt: ${message}`, options);
  }
}

/** A journal write failed (or an earlier one did): the host stops and must be restarted. */
export class HostStoppedError extends SandlotError {
  readonly code = 'host-stopped';
  readonly status = 503;
  readonly title = 'Reference host stopped after a durability failure';

  constructor(message: string, options?: { cause?: unknown }) {
    super(`reference host stopped: ${message}`, options);
  }
}

/** The host was started with options that contradict each other (a signer for another host). */
export class HostMisconfiguredError extends SandlotError {
  readonly code = 'host-misconfigured';
  readonly status = 500;
  readonly title = 'Reference host misconfigured';

  constructor(message: string) {
    super(`reference host misconfigured: ${message}`);
  }
}

/** An envelope for an Environment whose earlier operation is uncertain; cleared only by an operator. */
export class LeaseQuarantinedError extends SandlotError {
  readonly code = 'lease-quarantined';
  readonly status = 409;
  readonly title = 'Lease quarantined after an uncertain operation';

  constructor(message: string) {
    super(`lease quarantined: ${message}`);
  }
}

/** An operator cleanup that names no quarantined operation, or names no operator. */
export class CleanupRefusedError extends SandlotError {
  readonly code = 'cleanup-refused';
  readonly status = 409;
  readonly title = 'Quarantine cleanup refused';

  constructor(message: string) {
    super(`cleanup refused: ${message}`);
  }
}

/** The poll loop retried a transient control failure as often as it may, and gives up. */
export class ControlRetriesExhaustedError extends SandlotError {
  readonly code = 'host-control-retries-exhausted';
  readonly status = 503;
  readonly title = 'Host control channel still unavailable after bounded retries';

  constructor(attempts: number, options?: { cause?: unknown }) {
    super(`host control still unavailable after ${attempts} attempts`, options);
  }
}

const TRANSIENT_CODES = new Set(['host-control-unavailable']);
const TRANSIENT_NAMES = new Set(['ControlUnavailableError']);
const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

/**
 * The one retry decision: a control call that decided nothing (the channel's `unavailable`, or a
 * bare Node socket error) may be tried again; a refusal, a journal failure or anything else may not.
 */
export function isTransientControlError(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const { code, name } = error as { code?: unknown; name?: unknown };
  if (typeof code === 'string' && (TRANSIENT_CODES.has(code) || TRANSIENT_NODE_CODES.has(code))) return true;
  return typeof name === 'string' && TRANSIENT_NAMES.has(name);
}
