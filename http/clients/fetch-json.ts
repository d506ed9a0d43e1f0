// A bounded JSON GET for the external services we depend on. A failure is an error, never an empty
// answer: an authority we cannot reach must deny, not allow.
import { SandlotError } from '../../lib/errors.ts';

/** `reason` is a fixed phrase, an HTTP status or an error name, never response content: caller-safe. */
export class UpstreamError extends SandlotError {
  readonly code = 'upstream-unavailable';
  readonly status = 503;
  readonly title = 'Upstream unavailable';
  constructor(
    readonly service: string,
    reason: string,
  ) {
    super(`${service} is unavailable: ${reason}`);
  }

  override get detail(): string {
    return this.message;
  }
}

export async function getJson(
  service: string,
  url: URL,
  timeoutMs: number,
): Promise<{ status: 404 } | { status: 200; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new UpstreamError(service, error instanceof Error ? error.name : 'request failed');
  }
  if (response.status === 404) return { status: 404 };
  if (response.status !== 200) throw new UpstreamError(service, `HTTP ${response.status}`);
  try {
    return { status: 200, body: await response.json() };
  } catch {
    throw new UpstreamError(service, 'response is not JSON');
  }
}
