// Production RuntimeEvents port: Events' protected material route at a fixed, configured base URL
// (SANDLOT_EVENTS_URL; https, or http on a loopback host only), through the same bounded call as
// the Core ports (core-http.ts): the original actor's expiring bearer, `no-store` both ways, a
// fresh connection, no redirects, one deadline covering headers and the whole body. A 200 must be
// `no-store` and `application/octet-stream` before a byte is read; its body is capped at the
// acknowledged length while it streams (a longer body is refused before it is all read), and the
// bytes must have exactly the acknowledged length and SHA-256 (and equal `x-content-sha256` when
// Events sends one). 404 means none; 401/403 denied; 5xx unavailable; anything else refused.
// core-http.ts speaks in Core's errors; they are turned into Events' own here, reason for reason.
//
// Route, relative to the base URL (every segment percent-encoded):
//   GET tenants/{t}/projects/{p}/runs/{r}/steps/{s}/environments/{e}/sessions/{sessionId}
//       /events/{eventId}/protected-material/{objectReference}
import {
  CoreAnswerRefusedError,
  CoreDeniedError,
  CoreUnavailableError,
  type CoreAnswerProblem,
} from '../../actors/build-test/core-errors.ts';
import type { RuntimeStepRef } from '../../actors/runtime-core/runtime-operation.ts';
import {
  EventsAnswerRefusedError,
  EventsDeniedError,
  EventsUnavailableError,
  type EventsAnswerProblem,
} from '../../actors/runtime-events/errors.ts';
import {
  acceptMaterial,
  admitEventsCall,
  parseAcknowledgment,
} from '../../actors/runtime-events/material-checks.ts';
import type {
  ConfigurationAcknowledgment,
  EventsActor,
  ProtectedMaterial,
  RuntimeEvents,
} from '../../actors/runtime-events/ports.ts';
import { serviceBaseUrl } from './core-client.ts';
import { askCore, type CoreAnswer, type CoreCall } from './core-http.ts';

export interface HttpRuntimeEventsOptions {
  /** Events' base URL (SANDLOT_EVENTS_URL): https, or http on a loopback host only. */
  baseUrl: string;
  /** Deadline of one call, headers and body (default 10 s). */
  timeoutMs?: number;
  /** The service-backend-ca roots Events' certificate must chain to (default: the system store). */
  caPem?: string;
  now?: () => Date;
}

export class HttpRuntimeEvents implements RuntimeEvents {
  readonly #base: URL;
  readonly #timeoutMs: number;
  readonly #pin: { caPem?: string };
  readonly #now: () => Date;

  constructor(options: HttpRuntimeEventsOptions) {
    this.#base = serviceBaseUrl('Events', options.baseUrl);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#pin = options.caPem === undefined ? {} : { caPem: options.caPem };
    this.#now = options.now ?? (() => new Date());
  }

  async readProtectedMaterial(
    actor: EventsActor,
    ref: RuntimeStepRef,
    acknowledgment: ConfigurationAcknowledgment,
    signal: AbortSignal,
  ): Promise<ProtectedMaterial | null> {
    admitEventsCall(actor, signal, this.#now());
    const held = parseAcknowledgment(acknowledgment);
    const answer = await ask({
      url: this.#url(ref, held),
      method: 'GET',
      bearer: actor.bearer,
      accept: 'application/octet-stream',
      maxBytes: held.length,
      exactLength: held.length,
      timeoutMs: this.#timeoutMs,
      signal,
      ...this.#pin,
    });
    if (answer.status === 404) return null;
    const declared = answer.headers['x-content-sha256'];
    if (declared !== undefined && declared !== held.sha256) {
      throw new EventsAnswerRefusedError('material-mismatch', 'Events declares another SHA-256');
    }
    return acceptMaterial(held, answer.body);
  }

  #url(ref: RuntimeStepRef, held: ConfigurationAcknowledgment): URL {
    const segments = [
      'tenants',
      ref.tenantId,
      'projects',
      ref.projectId,
      'runs',
      ref.runId,
      'steps',
      ref.stepId,
      'environments',
      ref.environmentId,
      'sessions',
      held.sessionId,
      'events',
      held.eventId,
      'protected-material',
      held.objectReference,
    ];
    return new URL(segments.map(encodeURIComponent).join('/'), this.#base);
  }
}

/** Core's answer problems as Events' (an exact length is the acknowledged length here). */
const answerProblems: Record<CoreAnswerProblem, [EventsAnswerProblem, string]> = {
  'redirect-refused': ['redirect-refused', 'redirect refused'],
  'unexpected-status': ['unexpected-status', 'unexpected HTTP status'],
  'not-no-store': ['not-no-store', 'the answer is not marked no-store'],
  'wrong-content-type': ['wrong-content-type', 'the answer is not application/octet-stream'],
  'body-too-large': ['material-mismatch', 'the material is longer than acknowledged'],
  'seed-long': ['material-mismatch', 'the material is longer than acknowledged'],
  'seed-short': ['material-mismatch', 'the material is shorter than acknowledged'],
  'seed-digest-mismatch': ['material-mismatch', 'the material does not match its acknowledged SHA-256'],
  'no-seed': ['material-mismatch', 'no material'],
  malformed: ['material-mismatch', 'the answer is malformed'],
  'reference-mismatch': ['material-mismatch', 'the answer names other material'],
};

/** One bounded call, its failures as Events' errors (the Core error kept as the cause). */
async function ask(call: CoreCall): Promise<CoreAnswer> {
  try {
    return await askCore(call);
  } catch (error) {
    if (error instanceof CoreUnavailableError) {
      throw new EventsUnavailableError(error.reason, error.what, { cause: error });
    }
    if (error instanceof CoreDeniedError) throw new EventsDeniedError(error.reason);
    if (error instanceof CoreAnswerRefusedError) {
      const [reason, message] = answerProblems[error.reason];
      throw new EventsAnswerRefusedError(reason, message);
    }
    throw error;
  }
}
