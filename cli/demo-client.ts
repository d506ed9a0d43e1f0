// The demo's plumbing: an HTTP client that turns every failure into a DemoError a user can act
// on, the output (one status line rewritten in place on a terminal), and the poll-until helper.

export const REQUEST_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

/** A failure the user can act on; `main` prints the message and exits 1. */
export class DemoError extends Error {
  override readonly name = 'DemoError';
}

export interface Out {
  line(text: string): void;
  /** One status line: rewritten in place on a terminal, a plain line per change otherwise. */
  status(text: string, key: string): void;
  endStatus(): void;
}

export function output(stream: NodeJS.WriteStream): Out {
  const tty = stream.isTTY;
  let open = false;
  let lastKey: string | null = null;
  let lastText = '';
  return {
    line(text) {
      if (open) {
        stream.write('\n');
        open = false;
      }
      stream.write(`${text}\n`);
    },
    status(text, key) {
      lastText = text;
      if (tty) {
        stream.write(`\r\x1b[2K${text}`);
        open = true;
      } else if (key !== lastKey) {
        stream.write(`${text}\n`);
      }
      lastKey = key;
    },
    endStatus() {
      // Off a terminal the last state was already printed when it changed.
      if (tty && open) stream.write(`\r\x1b[2K${lastText}\n`);
      open = false;
      lastKey = null;
      lastText = '';
    },
  };
}

export class Client {
  /** `shown` is the URL as messages name it; `base` ends in `/` so relative paths resolve under it. */
  constructor(
    private readonly shown: string,
    private readonly base = `${shown}/`,
  ) {}

  async call<T>(
    step: string,
    method: string,
    urlPath: string,
    token: string | null,
    body?: unknown,
    accept: readonly number[] = [200, 201, 202],
  ): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = {};
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(new URL(urlPath, this.base), {
        method,
        headers,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new DemoError(`${step}: ${unreachable(this.shown, error)}`);
    }
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      throw new DemoError(`${step}: ${this.shown} answered ${res.status} with something that is not JSON`);
    }
    if (!accept.includes(res.status)) throw new DemoError(`${step}: ${describeProblem(res.status, parsed)}`);
    return { status: res.status, body: parsed as T };
  }

  /** A binary exchange: `body` sent as octet-stream; the answer's bytes and headers. */
  async raw(
    step: string,
    method: string,
    urlPath: string,
    token: string,
    body?: Uint8Array,
  ): Promise<{ status: number; bytes: Buffer; headers: Headers; problem: string }> {
    let res: Response;
    try {
      res = await fetch(new URL(urlPath, this.base), {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/octet-stream' }),
        },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        ...(body === undefined ? {} : { body }),
      });
    } catch (error) {
      throw new DemoError(`${step}: ${unreachable(this.shown, error)}`);
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    const json = (res.headers.get('content-type') ?? '').includes('json');
    let problem = '';
    if (json) {
      try {
        problem = describeProblem(res.status, JSON.parse(bytes.toString('utf8')));
      } catch {
        problem = `HTTP ${res.status}`;
      }
    }
    return { status: res.status, bytes, headers: res.headers, problem };
  }
}

export function unreachable(base: string, error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  const reason =
    error instanceof Error && error.name === 'TimeoutError'
      ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
      : (code ?? (cause instanceof Error ? cause.message : String(cause)));
  return `no Sandlot server answers at ${base} (${reason}). Start one with \`npx sandlot serve\`, or pass --url`;
}

export function describeProblem(status: number, body: unknown): string {
  const problem = (body ?? {}) as { type?: unknown; detail?: unknown; title?: unknown };
  const slug = typeof problem.type === 'string' ? problem.type.replace('urn:sandlot:problem:', '') : null;
  const detail = typeof problem.detail === 'string' ? problem.detail : problem.title;
  return `HTTP ${status}${slug === null ? '' : ` ${slug}`}${typeof detail === 'string' ? `: ${detail}` : ''}`;
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
export const pad = (text: string, width: number) => text.padEnd(width);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `done` holds; shows state, phase and elapsed time on one status line meanwhile. */
export async function waitFor<T>(
  out: Out,
  label: string,
  timeoutMs: number,
  read: () => Promise<T>,
  show: (value: T) => { text: string; key: string },
  done: (value: T) => boolean,
  fail: (value: T) => string | null,
  started = Date.now(),
): Promise<T> {
  for (;;) {
    const value = await read();
    const elapsed = Date.now() - started;
    const { text, key } = show(value);
    out.status(`  ${pad(label, 9)} ${text}  ${seconds(elapsed)}`, key);
    const failure = fail(value);
    if (failure !== null) {
      out.endStatus();
      throw new DemoError(failure);
    }
    if (done(value)) {
      out.endStatus();
      return value;
    }
    if (elapsed > timeoutMs) {
      out.endStatus();
      throw new DemoError(`${label}: still ${text} after ${seconds(elapsed)}; giving up`);
    }
    await sleep(POLL_MS);
  }
}
