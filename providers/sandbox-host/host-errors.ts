// The reference host's own failures, apart from the envelope and result refusals in errors.ts.
// Two are about the host's durability and stop it (a journal it cannot trust, a write it could not
// make): the host fails closed rather than guess. One is a refusal the host adds on top of envelope
// verification (a lease in quarantine). Which control-channel errors are worth retrying is decided
// in exactly one place, `isTransientControlError`, by code and name (errors cross processes).
// Messages name sequences, operation ids and line numbers, never envelope documents or keys.
import { fixedCodeError, SandboxHostError } from './sandbox-host-error.ts';

/** The journal cannot be read back as a consistent history; the host refuses to start over it. */
export class HostJournalCorruptError extends fixedCodeError({
  code: 'host-journal-corrupt',
  status: 500,
  title: 'Host journal corrupt',
  subject: 'host journal corrupt',
}) {}

/** A journal write failed (or an earlier one did): the host stops and must be restarted. */
export class HostStoppedError extends fixedCodeError({
  code: 'host-stopped',
  status: 503,
  title: 'Reference host stopped after a durability failure',
  subject: 'reference host stopped',
}) {}

/** The host was started with options that contradict each other (a signer for another host). */
export class HostMisconfiguredError extends fixedCodeError({
  code: 'host-misconfigured',
  status: 500,
  title: 'Reference host misconfigured',
  subject: 'reference host misconfigured',
}) {}

/** The journal directory is locked by another host (in this process or a live one). */
export class HostJournalLockedError extends fixedCodeError({
  code: 'host-journal-locked',
  status: 409,
  title: 'Reference host journal directory locked',
  subject: 'host journal locked',
}) {}

/** An envelope for an Environment whose earlier operation is uncertain; cleared only by an operator. */
export class LeaseQuarantinedError extends fixedCodeError({
  code: 'lease-quarantined',
  status: 409,
  title: 'Lease quarantined after an uncertain operation',
  subject: 'lease quarantined',
}) {}

/** An operator cleanup that names no quarantined operation, or names no operator. */
export class CleanupRefusedError extends fixedCodeError({
  code: 'cleanup-refused',
  status: 409,
  title: 'Quarantine cleanup refused',
  subject: 'cleanup refused',
}) {}

/** The poll loop retried a transient control failure as often as it may, and gives up. */
export class ControlRetriesExhaustedError extends SandboxHostError<'host-control-retries-exhausted'> {
  constructor(attempts: number, options?: ErrorOptions) {
    super(
      'host-control-retries-exhausted',
      { status: 503, title: 'Host control channel still unavailable after bounded retries' },
      `host control still unavailable after ${attempts} attempts`,
      options,
    );
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
