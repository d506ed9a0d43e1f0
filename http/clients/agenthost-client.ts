// Production AgentHost port: asks the Host inside one exact sandbox Pod over HTTPS, connecting to the
// observed Pod IP and verifying TLS for its Service DNS name against the `service-backend-ca` root
// (pinned-https.ts). A live probe never throws: its failure is a verdict with a code. A readiness
// read throws when the Host cannot be asked or answers malformed, because an outage is not a
// verdict; its answer is parsed strictly here, and compared with the lease elsewhere. The Workspace
// flush and the read-only Workspace resume (its content proof) are checked here in full
// (actors/agenthost/flush.ts): a refusal or an answer that does not match is a verdict, no answer
// at all is unavailability. The resume activation and
// session state are judged the same way (actors/agenthost/activation.ts).
import { z } from 'zod';
import {
  AgentHostActivationRefusedError,
  activationRefusalSchema,
  activationRequestBody,
  checkActivationReceipt,
  checkSessionState,
  type AgentHostActivationReceipt,
  type AgentHostSessionState,
  type SessionStateRequestBody,
} from '../../actors/agenthost/activation.ts';
import {
  AgentHostFlushRefusedError,
  AgentHostUnavailableError,
  AgentHostWorkspaceResumeRefusedError,
  checkFlushReceipt,
  checkWorkspaceResume,
  hostBindingOf,
  hostRefusalSchema,
  type AgentHostFlushReceipt,
  type AgentHostWorkspaceResume,
  type FlushRequestBody,
  type WorkspaceResumeRequestBody,
} from '../../actors/agenthost/flush.ts';
import type {
  AgentHost,
  AgentHostActivationRequest,
  AgentHostEndpoint,
  AgentHostFlushRequest,
  AgentHostReadiness,
  AgentHostTarget,
  AgentHostWorkspaceBinding,
  AgentHostWorkspaceResumeRequest,
  LiveProbeResult,
} from '../../actors/ports.ts';
import { PinnedHttpsError, pinnedGet, type PinnedResponse } from './pinned-https.ts';

export const LIVE_PATH = '/health/live';
export const READINESS_PATH = '/runtime/v1/readiness';
export const FLUSH_PATH = '/runtime/v1/workspace/flush';
export const WORKSPACE_RESUME_PATH = '/runtime/v1/workspace/resume';
export const ACTIVATE_PATH = '/runtime/v1/resume/activate';
export const SESSION_STATE_PATH = '/runtime/v1/session/state';

export interface HttpsAgentHostOptions {
  /** PEM bundle of the `service-backend-ca` root: the only roots a Host's certificate may chain to. */
  caPem: string;
  /** One deadline for connect, headers and body of each call (default 10 s). */
  timeoutMs?: number;
  /** Largest body read before the answer is refused (default 4 KiB). */
  maxBodyBytes?: number;
}

// Defined with the flush receipt (actors/), where the embedded Host throws it too; kept exported here.
export { AgentHostUnavailableError };

const liveAnswer = z.object({ status: z.literal('live') });

const notConfigured = z.strictObject({ configured: z.literal(false), reason: z.string().min(1).max(1024) });
const configured = z.strictObject({
  configured: z.literal(true),
  environmentId: z.string().min(1),
  operationId: z.string().min(1),
  resourceGeneration: z.number().int().nonnegative(),
  podUid: z.string().min(1).nullable(),
  workspaceMountPath: z.string().startsWith('/'),
  networkPolicyGeneration: z.number().int().nonnegative(),
  configuredAt: z.iso.datetime({ offset: true }),
  /** The runtime profile the Host was configured through, when it names one. */
  profileId: z.string().min(1).max(256).optional(),
});
const readinessAnswer = z.discriminatedUnion('configured', [notConfigured, configured]);

export class HttpsAgentHost implements AgentHost {
  readonly #caPem: string;
  readonly #timeoutMs: number;
  readonly #maxBodyBytes: number;

  constructor(options: HttpsAgentHostOptions) {
    if (!options.caPem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new TypeError('the AgentHost CA bundle holds no PEM certificate');
    }
    this.#caPem = options.caPem;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxBodyBytes = options.maxBodyBytes ?? 4096;
  }

  async probeLive(endpoint: AgentHostEndpoint, signal: AbortSignal): Promise<LiveProbeResult> {
    let response: PinnedResponse;
    try {
      response = await this.#get(endpoint, LIVE_PATH, signal);
    } catch (error) {
      if (error instanceof PinnedHttpsError) return { live: false, code: error.code, message: error.message };
      return { live: false, code: 'probe-failed', message: 'the probe failed' };
    }
    return judgeLive(response);
  }

  async readiness(target: AgentHostTarget, signal: AbortSignal): Promise<AgentHostReadiness> {
    if (target.endpoint === null) {
      throw new AgentHostUnavailableError('no-endpoint', 'the lease has no network endpoint');
    }
    let response: PinnedResponse;
    try {
      response = await this.#get(target.endpoint, READINESS_PATH, signal);
    } catch (error) {
      if (error instanceof PinnedHttpsError) {
        throw new AgentHostUnavailableError(error.code, error.message, { cause: error });
      }
      throw error;
    }
    if (response.status !== 200) {
      throw new AgentHostUnavailableError('bad-response', `HTTP ${response.status}`);
    }
    const body = jsonBody(response);
    const parsed = body === undefined ? undefined : readinessAnswer.safeParse(body.value);
    if (parsed?.success !== true) {
      throw new AgentHostUnavailableError('bad-response', 'the readiness answer is malformed');
    }
    return parsed.data;
  }

  /**
   * `POST /runtime/v1/workspace/flush` with the exact binding and flush identity. A 200 answer must
   * be the receipt for exactly that (checkFlushReceipt); a 409 carries the Host's refusal. Any other
   * status, or no answer at all, leaves the outcome unknown: AgentHostUnavailableError.
   */
  async flush(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostFlushRequest,
    signal: AbortSignal,
  ): Promise<AgentHostFlushReceipt> {
    const body: FlushRequestBody = {
      binding: hostBindingOf(binding),
      flushOperationId: request.flushOperationId,
      transitionRevision: request.transitionRevision,
    };
    const response = await this.#ask(binding, FLUSH_PATH, signal, body);
    const answer = judgeWorkspaceAnswer(response, hostRefusalSchema, (reason, message) => {
      throw new AgentHostFlushRefusedError(reason, message);
    });
    return checkFlushReceipt(binding, request, answer);
  }

  /**
   * `POST /runtime/v1/workspace/resume` with the exact binding and resume operation: read-only on the
   * Host, judged like `flush`. A 200 answer must be the content proof for exactly that binding and
   * resume (checkWorkspaceResume).
   */
  async workspaceResume(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostWorkspaceResumeRequest,
    signal: AbortSignal,
  ): Promise<AgentHostWorkspaceResume> {
    const body: WorkspaceResumeRequestBody = {
      binding: hostBindingOf(binding),
      resumeOperationId: request.resumeOperationId,
    };
    const response = await this.#ask(binding, WORKSPACE_RESUME_PATH, signal, body);
    const answer = judgeWorkspaceAnswer(response, hostRefusalSchema, (reason, message) => {
      throw new AgentHostWorkspaceResumeRefusedError(reason, message);
    });
    return checkWorkspaceResume(binding, request, answer);
  }

  /**
   * `POST /runtime/v1/resume/activate` with the exact binding, attempt, registration and the
   * configuration bytes (base64) with their SHA-256. A 200 answer must be the receipt for exactly
   * that (checkActivationReceipt); a 409 carries the Host's refusal; anything else is unavailability.
   */
  async activate(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostActivationRequest,
    signal: AbortSignal,
  ): Promise<AgentHostActivationReceipt> {
    const body = activationRequestBody(binding, request);
    const response = await this.#ask(binding, ACTIVATE_PATH, signal, body);
    const answer = judgeWorkspaceAnswer(response, activationRefusalSchema, (reason, message) => {
      throw new AgentHostActivationRefusedError(reason, message);
    });
    return checkActivationReceipt(binding, request, answer);
  }

  /** `POST /runtime/v1/session/state` with `{ binding }`: read-only, judged like `activate`. */
  async sessionState(
    binding: AgentHostWorkspaceBinding,
    signal: AbortSignal,
  ): Promise<AgentHostSessionState> {
    const body: SessionStateRequestBody = { binding: hostBindingOf(binding) };
    const response = await this.#ask(binding, SESSION_STATE_PATH, signal, body);
    const answer = judgeWorkspaceAnswer(response, activationRefusalSchema, (reason, message) => {
      throw new AgentHostActivationRefusedError(reason, message);
    });
    return checkSessionState(binding, answer);
  }

  async #ask(
    target: AgentHostTarget,
    path: string,
    signal: AbortSignal,
    body?: object,
  ): Promise<PinnedResponse> {
    if (target.endpoint === null) {
      throw new AgentHostUnavailableError('no-endpoint', 'the lease has no network endpoint');
    }
    try {
      return await this.#get(target.endpoint, path, signal, body);
    } catch (error) {
      if (error instanceof PinnedHttpsError) {
        throw new AgentHostUnavailableError(error.code, error.message, { cause: error });
      }
      throw error;
    }
  }

  #get(
    endpoint: AgentHostEndpoint,
    path: string,
    signal: AbortSignal,
    body?: unknown,
  ): Promise<PinnedResponse> {
    return pinnedGet({
      podIp: endpoint.podIp,
      port: endpoint.port,
      serverName: endpoint.serverName,
      path,
      ...(body === undefined ? {} : { method: 'POST', body: Buffer.from(JSON.stringify(body), 'utf8') }),
      caPem: this.#caPem,
      timeoutMs: this.#timeoutMs,
      maxBodyBytes: this.#maxBodyBytes,
      signal,
    });
  }
}

/**
 * The JSON body of a 200 answer to a Workspace call, for the caller to check. A 409 with a refusal
 * the Host may give is that refusal; a 200 that is not JSON is a malformed receipt (a refusal); any
 * other status says nothing about the outcome, so the Host counts as unavailable.
 */
function judgeWorkspaceAnswer<Code extends string>(
  response: PinnedResponse,
  refusals: z.ZodType<{ refused: Code }>,
  refuse: (reason: Code | 'receipt-malformed', message: string) => never,
): unknown {
  const body = jsonBody(response);
  if (response.status === 409) {
    const refusal = body === undefined ? undefined : refusals.safeParse(body.value);
    if (refusal?.success === true) return refuse(refusal.data.refused, 'the Host refused');
    throw new AgentHostUnavailableError('bad-response', 'HTTP 409 without a refusal');
  }
  if (response.status !== 200) {
    throw new AgentHostUnavailableError('bad-response', `HTTP ${response.status}`);
  }
  if (body === undefined) return refuse('receipt-malformed', 'the answer is not JSON');
  return body.value;
}

/** Only a 200, no-store, JSON `{"status":"live"}` is live. */
function judgeLive(response: PinnedResponse): LiveProbeResult {
  if (response.status !== 200) {
    return { live: false, code: 'not-live', message: `HTTP ${response.status}` };
  }
  if (!noStore(response.headers['cache-control'])) {
    return { live: false, code: 'cacheable-response', message: 'the answer is not marked no-store' };
  }
  const body = jsonBody(response);
  if (body === undefined) return { live: false, code: 'not-json', message: 'the answer is not JSON' };
  if (!liveAnswer.safeParse(body.value).success) {
    return { live: false, code: 'not-live', message: 'the answer does not say live' };
  }
  return { live: true };
}

function noStore(cacheControl: string | undefined): boolean {
  return (cacheControl ?? '').split(',').some((d) => d.trim().toLowerCase() === 'no-store');
}

/** The parsed body of an `application/json` answer; undefined for any other type or invalid JSON. */
function jsonBody(response: PinnedResponse): { value: unknown } | undefined {
  const mediaType = (response.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') return undefined;
  try {
    return { value: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(response.body)) as unknown };
  } catch {
    return undefined;
  }
}
