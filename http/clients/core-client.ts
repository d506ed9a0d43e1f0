// Production Core port: Core's BuildTest routes at one fixed, configured base URL (never an address a
// caller supplied), asked with the original actor's expiring bearer, `no-store` both ways, bounded
// bodies (checkpoint JSON up to 4 MiB, a seed exactly its accepted length, at most 67,188,876 bytes),
// no redirects and one deadline per call covering headers and the whole body (core-http.ts).
// Every answer is parsed strictly; an accepted command must name the checkpoint that was asked
// for. A seed is checked against the caller's accepted length and SHA-256, and Core's metadata is
// read again after the transfer: the bytes are returned only if the command is still the same.
//
// Routes, relative to the base URL (every segment percent-encoded):
//   GET  tenants/{t}/projects/{p}/runs/{r}/build-test/steps/{s}/checkpoints/{c}/accepted-command
//   GET  …/checkpoints/{c}/workspace-seed
//   POST …/checkpoints/{c}/operations/{operationId}/journal-acknowledgment/verify
import { z } from 'zod';
import {
  MAX_CHECKPOINT_JSON_BYTES,
  acceptedCommandSchema,
  sameCheckpoint,
} from '../../actors/build-test/accepted-command.ts';
import {
  admitCall,
  checkSeedBytes,
  checkUnchanged,
  expectedSeed,
} from '../../actors/build-test/core-checks.ts';
import { CoreAnswerRefusedError, CoreDeniedError } from '../../actors/build-test/core-errors.ts';
import type {
  AcceptedBuildTestCommand,
  AcknowledgmentVerdict,
  BuildTestCheckpointRef,
  Core,
  CoreActor,
  JournalAcknowledgment,
} from '../../actors/ports.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { askCore, jsonOf, type CoreAnswer, type CoreCall } from './core-http.ts';

export interface HttpCoreOptions {
  /** Core's base URL: https, or http on a loopback host only (tests, a sidecar). */
  baseUrl: string;
  /** Deadline of a metadata call (default 10 s). */
  timeoutMs?: number;
  /** Deadline of a seed transfer, headers and body (default 120 s). */
  seedTimeoutMs?: number;
  /** The service-backend-ca roots Core's certificate must chain to (default: the system store). */
  caPem?: string;
  now?: () => Date;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** RFC 6750 b64token: what a bearer header may carry (never a CR, LF or space). */
const BEARER = /^[A-Za-z0-9\-._~+/]+=*$/;
const MAX_VERDICT_BYTES = 64 * 1024;

const verdictSchema = z.discriminatedUnion('verified', [
  z.strictObject({ verified: z.literal(true) }),
  z.strictObject({ verified: z.literal(false), reason: z.string().min(1).max(1024) }),
]);

export function coreBaseUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.search !== '' || url.hash !== '') return 'must not have a query or fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return undefined;
  return 'must be https:// (http:// only for 127.0.0.1, localhost or ::1)';
}

/**
 * A Core-side service's base URL (Core, Events), checked by the rule above and ending in `/`, so
 * relative paths resolve under it. `service` names it in the error.
 */
export function serviceBaseUrl(service: string, value: string): URL {
  const problem = coreBaseUrlProblem(value);
  if (problem !== undefined) throw new TypeError(`the ${service} base URL ${problem}`);
  return new URL(value.endsWith('/') ? value : `${value}/`);
}

export class HttpCore implements Core {
  readonly #base: URL;
  readonly #timeoutMs: number;
  readonly #seedTimeoutMs: number;
  readonly #pin: { caPem?: string };
  readonly #now: () => Date;

  constructor(options: HttpCoreOptions) {
    this.#base = serviceBaseUrl('Core', options.baseUrl);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#seedTimeoutMs = options.seedTimeoutMs ?? 120_000;
    this.#pin = options.caPem === undefined ? {} : { caPem: options.caPem };
    this.#now = options.now ?? (() => new Date());
  }

  async acceptedCommand(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<AcceptedBuildTestCommand | null> {
    const answer = await this.#call(actor, signal, {
      url: this.#url(checkpoint, ['accepted-command']),
      method: 'GET',
      accept: 'application/json',
      maxBytes: MAX_CHECKPOINT_JSON_BYTES,
      timeoutMs: this.#timeoutMs,
    });
    if (answer.status === 404) return null;
    const parsed = acceptedCommandSchema.safeParse(jsonOf(answer));
    if (!parsed.success) throw new CoreAnswerRefusedError('malformed', 'the accepted command is malformed');
    if (!sameCheckpoint(parsed.data.checkpoint, checkpoint)) {
      throw new CoreAnswerRefusedError('reference-mismatch', 'the accepted command names another checkpoint');
    }
    return parsed.data;
  }

  async workspaceSeed(
    actor: CoreActor,
    command: AcceptedBuildTestCommand,
    signal: AbortSignal,
  ): Promise<Uint8Array> {
    const expected = expectedSeed(command);
    const answer = await this.#call(actor, signal, {
      url: this.#url(command.checkpoint, ['workspace-seed']),
      method: 'GET',
      accept: 'application/octet-stream',
      maxBytes: expected.length,
      exactLength: expected.length,
      timeoutMs: this.#seedTimeoutMs,
    });
    if (answer.status === 404)
      throw new CoreAnswerRefusedError('no-seed', 'Core has no seed for this checkpoint');
    checkSeedBytes(answer.body, expected);
    checkUnchanged(command, await this.acceptedCommand(actor, command.checkpoint, signal));
    return answer.body;
  }

  async verifyAcknowledgment(
    actor: CoreActor,
    acknowledgment: JournalAcknowledgment,
    signal: AbortSignal,
  ): Promise<AcknowledgmentVerdict> {
    const answer = await this.#call(actor, signal, {
      url: this.#url(acknowledgment.checkpoint, [
        'operations',
        acknowledgment.operationId,
        'journal-acknowledgment',
        'verify',
      ]),
      method: 'POST',
      body: Buffer.from(canonicalJson(acknowledgment), 'utf8'),
      accept: 'application/json',
      maxBytes: MAX_VERDICT_BYTES,
      timeoutMs: this.#timeoutMs,
    });
    if (answer.status === 404) return { verified: false, reason: 'Core knows no such operation' };
    const parsed = verdictSchema.safeParse(jsonOf(answer));
    if (!parsed.success)
      throw new CoreAnswerRefusedError('malformed', 'the verification answer is malformed');
    return parsed.data;
  }

  /** Admits the call, asks once, and maps every status but 200 and 404 to an error. */
  async #call(
    actor: CoreActor,
    signal: AbortSignal,
    call: Omit<CoreCall, 'bearer' | 'signal'>,
  ): Promise<CoreAnswer> {
    admitCall(actor, signal, this.#now());
    if (!BEARER.test(actor.bearer)) throw new CoreDeniedError('denied');
    return askCore({ ...call, bearer: actor.bearer, signal, ...this.#pin });
  }

  #url(checkpoint: BuildTestCheckpointRef, rest: readonly string[]): URL {
    const segments = [
      'tenants',
      checkpoint.tenantId,
      'projects',
      checkpoint.projectId,
      'runs',
      checkpoint.runId,
      'build-test',
      'steps',
      checkpoint.stepId,
      'checkpoints',
      checkpoint.checkpointId,
      ...rest,
    ];
    return new URL(segments.map(encodeURIComponent).join('/'), this.#base);
  }
}
