// Production AgentHost port: asks the Host inside one exact sandbox Pod over HTTPS, connecting to the
// observed Pod IP and verifying TLS for its Service DNS name against the `service-backend-ca` root
// (pinned-https.ts). A live probe never throws: its failure is a verdict with a code. A readiness
// read throws when the Host cannot be asked or answers malformed, because an outage is not a
// verdict; its answer is parsed strictly here, and compared with the lease elsewhere.
import { z } from 'zod';
import type {
  AgentHost,
  AgentHostEndpoint,
  AgentHostReadiness,
  AgentHostTarget,
  LiveProbeResult,
} from '../../actors/ports.ts';
import { SandlotError } from '../../lib/errors.ts';
import { PinnedHttpsError, pinnedGet, type PinnedResponse } from './pinned-https.ts';

export const LIVE_PATH = '/health/live';
export const READINESS_PATH = '/runtime/v1/readiness';

export interface HttpsAgentHostOptions {
  /** PEM bundle of the `service-backend-ca` root: the only roots a Host's certificate may chain to. */
  caPem: string;
  /** One deadline for connect, headers and body of each call (default 10 s). */
  timeoutMs?: number;
  /** Largest body read before the answer is refused (default 4 KiB). */
  maxBodyBytes?: number;
}

/** `reason` is a transport code or a fixed phrase, never response content: caller-safe. */
export class AgentHostUnavailableError extends SandlotError {
  readonly code = 'agenthost-unavailable';
  readonly status = 503;
  readonly title = 'AgentHost unavailable';

  constructor(
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`the AgentHost cannot be asked: ${message}`, options);
  }

  override get detail(): string {
    return `the AgentHost cannot be asked (${this.reason})`;
  }
}

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

  #get(endpoint: AgentHostEndpoint, path: string, signal: AbortSignal): Promise<PinnedResponse> {
    return pinnedGet({
      podIp: endpoint.podIp,
      port: endpoint.port,
      serverName: endpoint.serverName,
      path,
      caPem: this.#caPem,
      timeoutMs: this.#timeoutMs,
      maxBodyBytes: this.#maxBodyBytes,
      signal,
    });
  }
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
