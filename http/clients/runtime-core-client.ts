// Production RuntimeCore port: Core's suspend/resume routes at the same fixed, configured base URL
// as the BuildTest port (SANDLOT_CORE_URL), under the same rules, through the same bounded call
// (core-http.ts): the original actor's expiring bearer per call, `no-store` both ways, the media type
// checked before the body is read, no redirects, answers of at most 64 KiB, one deadline per call
// covering headers and the whole body. 404 means none; 401/403 denied; 5xx unavailable. Every
// answer is parsed strictly and must name the step or operation that was asked about.
//
// Routes, relative to the base URL (every segment percent-encoded):
//   GET  tenants/{t}/projects/{p}/runs/{r}/steps/{s}/environments/{e}/runtime/current-operation
//   POST …/environments/{e}/runtime/operations/{operationId}/confirm-saved   body {operation, evidence}
//   GET  …/environments/{e}/runtime/current-registration
import type {
  CoreActor,
  RuntimeCore,
  RuntimeOperation,
  RuntimeRegistration,
  RuntimeStepRef,
  SavedOperationEvidence,
  SavedOperationVerdict,
} from '../../actors/ports.ts';
import {
  MAX_RUNTIME_ANSWER_BYTES,
  acceptRuntimeAnswer,
  acceptVerdict,
  runtimeOperationSchema,
  runtimeRegistrationSchema,
} from '../../actors/runtime-core/runtime-operation.ts';
import { admitRuntimeCall } from '../../actors/runtime-core/runtime-checks.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { serviceBaseUrl } from './core-client.ts';
import { askCore, jsonOf, type CoreAnswer, type CoreCall } from './core-http.ts';

export interface HttpRuntimeCoreOptions {
  /** Core's base URL (SANDLOT_CORE_URL): https, or http on a loopback host only. */
  baseUrl: string;
  /** Deadline of one call, headers and body (default 10 s). */
  timeoutMs?: number;
  /** The service-backend-ca roots Core's certificate must chain to (default: the system store). */
  caPem?: string;
  now?: () => Date;
}

export class HttpRuntimeCore implements RuntimeCore {
  readonly #base: URL;
  readonly #timeoutMs: number;
  readonly #pin: { caPem?: string };
  readonly #now: () => Date;

  constructor(options: HttpRuntimeCoreOptions) {
    this.#base = serviceBaseUrl('Core', options.baseUrl);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#pin = options.caPem === undefined ? {} : { caPem: options.caPem };
    this.#now = options.now ?? (() => new Date());
  }

  async currentRuntimeOperation(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
  ): Promise<RuntimeOperation | null> {
    const answer = await this.#get(actor, signal, this.#url(ref, ['current-operation']));
    if (answer.status === 404) return null;
    return acceptRuntimeAnswer(runtimeOperationSchema, jsonOf(answer), ref, 'operation');
  }

  async confirmSavedOperation(
    actor: CoreActor,
    operation: RuntimeOperation,
    evidence: SavedOperationEvidence,
    signal: AbortSignal,
  ): Promise<SavedOperationVerdict> {
    const answer = await this.#call(actor, signal, {
      url: this.#url(operation.ref, ['operations', operation.operationId, 'confirm-saved']),
      method: 'POST',
      body: Buffer.from(canonicalJson({ operation, evidence }), 'utf8'),
      accept: 'application/json',
      maxBytes: MAX_RUNTIME_ANSWER_BYTES,
      timeoutMs: this.#timeoutMs,
    });
    if (answer.status === 404) return { confirmed: false, reason: 'Core knows no such operation' };
    return acceptVerdict(jsonOf(answer), operation.operationId);
  }

  async currentRuntimeRegistration(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
  ): Promise<RuntimeRegistration | null> {
    const answer = await this.#get(actor, signal, this.#url(ref, ['current-registration']));
    if (answer.status === 404) return null;
    return acceptRuntimeAnswer(runtimeRegistrationSchema, jsonOf(answer), ref, 'registration');
  }

  #get(actor: CoreActor, signal: AbortSignal, url: URL): Promise<CoreAnswer> {
    return this.#call(actor, signal, {
      url,
      method: 'GET',
      accept: 'application/json',
      maxBytes: MAX_RUNTIME_ANSWER_BYTES,
      timeoutMs: this.#timeoutMs,
    });
  }

  /** Admits the call, asks once, and maps every status but 200 and 404 to an error. */
  async #call(
    actor: CoreActor,
    signal: AbortSignal,
    call: Omit<CoreCall, 'bearer' | 'signal'>,
  ): Promise<CoreAnswer> {
    admitRuntimeCall(actor, signal, this.#now());
    return askCore({ ...call, bearer: actor.bearer, signal, ...this.#pin });
  }

  #url(ref: RuntimeStepRef, rest: readonly string[]): URL {
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
      'runtime',
      ...rest,
    ];
    return new URL(segments.map(encodeURIComponent).join('/'), this.#base);
  }
}
