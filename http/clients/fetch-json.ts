// A bounded JSON GET for the external services we depend on. A failure is an error, never an empty
// answer: an authority we cannot reach must deny, not allow.
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  readonly code = 'upstream-unavailable';
  constructor(
    readonly service: string,
    reason: string,
  ) {
    super(`${service} is unavailable: ${reason}`);
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
