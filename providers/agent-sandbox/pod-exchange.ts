// One bounded exchange with a fixed helper container, over the API server's Pod `exec` subresource
// (WebSocket, `v5.channel.k8s.io`). The helper proves where it runs before it gets anything: its
// first stdout line names the Pod UID and the request fingerprint, and no payload byte is sent
// until both equal what the caller expects. Then the payload goes on stdin, stdin is closed, and the
// helper's answer is read up to a bound and accepted only with a `Success` status.
//
// Classification (providers/errors.ts): a refusal of the upgrade, a wrong identity, a payload over
// its limit and a non-Success exit status are definitive (the helper's contract is that a non-zero
// exit commits nothing); a lost connection, the deadline, cancellation, a premature `Success` and
// an answer over its bound are uncertain, because the helper may already have acted. Credentials
// come from the KubeConfig exactly as the adapter's client uses them and never reach a message.
import WebSocket, { type ClientOptions, type RawData } from 'ws';
import { MAX_SEED_BYTES } from '../../formats/awscapt2/document-limits.ts';
import { callBudget } from '../call-budget.ts';
import { ProviderError, definitive, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { KubeConfig } from './client-node.ts';

export const EXEC_PROTOCOL = 'v5.channel.k8s.io';
export const DEFAULT_MAX_PAYLOAD_BYTES = MAX_SEED_BYTES;
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_MAX_STDERR_BYTES = 64 * 1024;
/** The identity line is a short JSON object; anything longer is not our helper. */
const MAX_IDENTITY_BYTES = 1024;
/** Stdin frames carry at most this much, and each is flushed before the next is built. */
const CHUNK_BYTES = 256 * 1024;

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;
const CLOSE = 255;

/** A payload streamed in chunks; `length` is declared up front so the limit is checked first. */
export interface StreamedPayload {
  length: number;
  chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
}

export interface PodExchangeRequest {
  namespace: string;
  pod: string;
  /** The exact Pod UID the helper must report. */
  podUid: string;
  /** A fixed container of the Pod, and the fixed argv run in it. */
  container: string;
  command: readonly string[];
  /** What the helper must report as `requestFingerprint`. */
  requestFingerprint: string;
  payload: Uint8Array | StreamedPayload;
}

export interface PodExchangeOptions extends CallOptions {
  /** Default 67,188,876 bytes (a version 2 seed's bound). */
  maxPayloadBytes?: number;
  /** Stdout after the identity line (default 4 MiB). */
  maxResponseBytes?: number;
  /** Stderr kept; the rest is dropped, not refused (default 64 KiB). */
  maxStderrBytes?: number;
  /**
   * Takes stdout after the identity line as it arrives instead of keeping it (the result's `stdout`
   * is then empty); still bounded by `maxResponseBytes`. `flow` stops and restarts reading from the
   * connection, so a slow reader holds the helper back instead of filling memory.
   */
  onStdout?: (chunk: Buffer, flow: ExchangeFlow) => void;
}

/** Backpressure on an exchange's answer. */
export interface ExchangeFlow {
  pause(): void;
  resume(): void;
}

/** The exec status from channel 3, reduced to what callers decide on. */
export interface ExecStatus {
  status: 'Success' | 'Failure';
  reason?: string;
  message?: string;
  exitCode?: number;
}

export interface PodExchangeResult {
  /** Stdout after the identity line, at most `maxResponseBytes`. */
  stdout: Buffer;
  /** UTF-8 of at most `maxStderrBytes` bytes of stderr. */
  stderr: string;
  stderrTruncated: boolean;
  status: ExecStatus;
  payloadBytes: number;
}

const budget = callBudget('Pod exchange');

/** The exit code a non-Success status carried, when the error is one. */
export function exchangeExitCode(error: unknown): number | undefined {
  if (!(error instanceof ProviderError) || error.code !== 'exec-exit-status') return undefined;
  return (error.cause as ExecStatus | undefined)?.exitCode;
}

function parseStatus(body: Buffer): ExecStatus {
  let raw: {
    status?: unknown;
    reason?: unknown;
    message?: unknown;
    details?: { causes?: { reason?: unknown; message?: unknown }[] };
  };
  try {
    raw = JSON.parse(body.toString('utf8')) as typeof raw;
  } catch {
    return { status: 'Failure', reason: 'UnreadableStatus' };
  }
  const status: ExecStatus = { status: raw.status === 'Success' ? 'Success' : 'Failure' };
  if (typeof raw.reason === 'string') status.reason = raw.reason;
  if (typeof raw.message === 'string') status.message = raw.message.slice(0, 512);
  const exit = raw.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  if (typeof exit === 'string' && /^\d+$/.test(exit)) status.exitCode = Number(exit);
  return status;
}

function execUrl(kube: KubeConfig, request: PodExchangeRequest): string {
  const server = kube.getCurrentCluster()?.server;
  if (!server?.startsWith('https://')) {
    throw definitive('exec-insecure-server', 'Pod exchange needs an https:// Kubernetes API server');
  }
  const url = new URL(server);
  const [ns, pod] = [encodeURIComponent(request.namespace), encodeURIComponent(request.pod)];
  // Keeps a path prefix the server URL may carry (an API proxy's), without doubling the slash.
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/api/v1/namespaces/${ns}/pods/${pod}/exec`;
  url.protocol = 'wss:';
  const query = new URLSearchParams({ container: request.container });
  for (const arg of request.command) query.append('command', arg);
  for (const stream of ['stdin', 'stdout', 'stderr']) query.append(stream, 'true');
  url.search = query.toString();
  return url.toString();
}

async function* chunksOf(payload: Uint8Array | StreamedPayload): AsyncGenerator<Uint8Array> {
  if (payload instanceof Uint8Array) yield payload;
  else yield* payload.chunks;
}

/**
 * Runs `request.command` in `request.container` of the Pod, checks the helper's identity, streams
 * the payload on stdin, closes stdin and returns the bounded answer. Throws ProviderError only.
 */
export async function exchangeWithContainer(
  kube: KubeConfig,
  request: PodExchangeRequest,
  options: PodExchangeOptions,
): Promise<PodExchangeResult> {
  const where = `${request.namespace}/${request.pod} container ${request.container}`;
  const say = (why: string) => `Pod exchange with ${where}: ${why}`;
  const length = request.payload.length;
  const maxPayload = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (!Number.isSafeInteger(length) || length < 0 || length > maxPayload) {
    throw definitive(
      'exec-payload-too-large',
      `Pod exchange payload of ${length} bytes exceeds ${maxPayload}`,
    );
  }
  budget.check(options, `with ${where}`);
  const tls: ClientOptions & { headers: Record<string, string> } = { headers: {} };
  try {
    await kube.applyToHTTPSOptions(tls);
  } catch {
    // The reason may quote credential material; the code says enough.
    throw definitive('exec-credentials', say("the KubeConfig's credentials could not be applied"));
  }
  budget.check(options, `with ${where}`); // a credential plugin may have used up the time
  const secret = tls.headers['Authorization'] ?? tls.headers['authorization'];
  const maxResponse = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const maxStderr = options.maxStderrBytes ?? DEFAULT_MAX_STDERR_BYTES;
  const ws = new WebSocket(execUrl(kube, request), [EXEC_PROTOCOL], {
    ...tls,
    followRedirects: false,
    perMessageDeflate: false,
    maxPayload: maxResponse + maxStderr + MAX_IDENTITY_BYTES + 1,
  });
  const flow: ExchangeFlow = { pause: () => ws.pause(), resume: () => ws.resume() };
  return new Promise<PodExchangeResult>((resolve, reject) => {
    let phase: 'identity' | 'transfer' | 'response' = 'identity';
    let settled = false;
    let identity = Buffer.alloc(0);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const stderr: Buffer[] = [];
    let stderrBytes = 0;
    let payloadBytes = 0;

    /** Removes the bearer from text that came from elsewhere (a TLS or socket error message). */
    const clean = (text: string) => (secret ? text.split(secret).join('[redacted]') : text);
    const refuse = (code: string, why: string) => definitive(code, say(why));
    /** After the first payload byte, what went wrong leaves the helper's effect unknown. */
    const failed = (code: string, why: string) =>
      phase === 'identity' ? refuse(code, why) : uncertain(code, say(why));
    const lost = (why: string) => uncertain('exec-connection-lost', say(`connection lost: ${clean(why)}`));

    const finish = (error: ProviderError | undefined, status?: ExecStatus) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      if (error) {
        ws.terminate();
        reject(error);
        return;
      }
      ws.close(1000);
      const kept = Buffer.concat(stderr);
      resolve({
        stdout: Buffer.concat(stdout),
        stderr: kept.toString('utf8'),
        stderrTruncated: stderrBytes > kept.length,
        status: status ?? { status: 'Success' },
        payloadBytes,
      });
    };
    const onAbort = () => finish(budget.cancelled(`with ${where}`, options.signal));
    // Clamped: Node fires a timer of more than 2^31 - 1 ms at once.
    const remaining = Math.min(2 ** 31 - 1, Math.max(0, options.deadline.getTime() - Date.now()));
    const timer = setTimeout(() => finish(budget.timedOut(`with ${where}`, options.deadline)), remaining);
    options.signal.addEventListener('abort', onAbort, { once: true });

    const sendFrame = (channel: number, body: Uint8Array) =>
      new Promise<void>((done, fail) => {
        const frame = Buffer.allocUnsafe(body.length + 1);
        frame[0] = channel;
        frame.set(body, 1);
        ws.send(frame, { binary: true }, (error) => (error ? fail(error) : done()));
      });

    const sendPayload = async () => {
      for await (const chunk of chunksOf(request.payload)) {
        for (let offset = 0; offset < chunk.length; offset += CHUNK_BYTES) {
          if (settled) return;
          const piece = chunk.subarray(offset, offset + CHUNK_BYTES);
          if (payloadBytes + piece.length > length) {
            throw uncertain(
              'exec-payload-length',
              say(`the payload is longer than its declared ${length} bytes`),
            );
          }
          await sendFrame(STDIN, piece);
          payloadBytes += piece.length;
        }
      }
      if (payloadBytes !== length) {
        throw uncertain(
          'exec-payload-length',
          say(`the payload ended at ${payloadBytes} of ${length} bytes`),
        );
      }
      if (settled) return;
      // Before the send: the status may race the close frame's write callback.
      phase = 'response';
      await sendFrame(CLOSE, Uint8Array.of(STDIN));
    };

    const startTransfer = () => {
      phase = 'transfer';
      sendPayload().catch((error: unknown) =>
        finish(
          error instanceof ProviderError
            ? error
            : lost(error instanceof Error ? error.message : String(error)),
        ),
      );
    };

    const onIdentity = (body: Buffer) => {
      identity = Buffer.concat([identity, body]);
      const end = identity.indexOf(0x0a);
      if (end < 0) {
        if (identity.length > MAX_IDENTITY_BYTES)
          finish(refuse('exec-identity-mismatch', 'no identity line'));
        return;
      }
      let claimed: { podUid?: unknown; requestFingerprint?: unknown } = {};
      try {
        claimed = JSON.parse(identity.subarray(0, end).toString('utf8')) as typeof claimed;
      } catch {
        // An unreadable line is a mismatch like any other.
      }
      if (claimed.podUid !== request.podUid || claimed.requestFingerprint !== request.requestFingerprint) {
        const said = `Pod UID ${String(claimed.podUid)}, fingerprint ${String(claimed.requestFingerprint)}`;
        return finish(refuse('exec-identity-mismatch', `the helper identified as ${said}, not as expected`));
      }
      startTransfer();
      const rest = identity.subarray(end + 1);
      if (rest.length > 0) onStdout(rest);
    };

    const onStdout = (body: Buffer) => {
      stdoutBytes += body.length;
      if (stdoutBytes > maxResponse) {
        finish(failed('exec-response-too-large', `the helper's answer exceeds ${maxResponse} bytes`));
        return;
      }
      if (options.onStdout === undefined) stdout.push(body);
      else options.onStdout(body, flow);
    };

    const onStatus = (status: ExecStatus) => {
      if (status.status !== 'Success') {
        const code =
          status.exitCode === undefined ? (status.reason ?? 'unknown') : `exit code ${status.exitCode}`;
        const message = say(`the helper failed with ${code}`);
        finish(new ProviderError('exec-exit-status', 'definitive', message, { cause: status }));
      } else if (phase === 'response') {
        finish(undefined, status);
      } else {
        finish(failed('exec-premature-exit', 'the helper exited before it received the whole payload'));
      }
    };

    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (settled) return;
      const frame = Buffer.isBuffer(data)
        ? data
        : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]);
      if (!isBinary || frame.length === 0)
        return finish(failed('exec-protocol', 'a frame without a channel'));
      const body = frame.subarray(1);
      if (body.length === 0) return; // a channel opening, or an empty write
      const channel = frame[0];
      if (channel === STDOUT) return phase === 'identity' ? onIdentity(body) : onStdout(body);
      if (channel === STDERR) {
        stderrBytes += body.length;
        const room = maxStderr - (stderrBytes - body.length);
        if (room > 0) stderr.push(body.subarray(0, room));
        return;
      }
      if (channel === STATUS) return onStatus(parseStatus(body));
      if (channel === RESIZE || channel === CLOSE) return;
      finish(failed('exec-protocol', `a frame on unknown channel ${String(channel)}`));
    });
    ws.on('open', () => {
      if (ws.protocol !== EXEC_PROTOCOL) {
        finish(
          refuse('exec-protocol', `the server chose subprotocol "${ws.protocol}", not ${EXEC_PROTOCOL}`),
        );
      }
    });
    ws.on('unexpected-response', (_request, response) => {
      const code = response.statusCode ?? 0;
      response.resume();
      const what = code >= 300 && code < 400 ? 'a redirect, which is never followed' : 'a refusal';
      const why = `the API server answered HTTP ${code} (${what}) instead of switching protocols`;
      finish(refuse('exec-upgrade-refused', why));
    });
    ws.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        finish(failed('exec-response-too-large', 'a frame larger than the answer bound'));
      } else if (error.message.includes('subprotocol')) {
        finish(refuse('exec-protocol', `the server did not agree to ${EXEC_PROTOCOL}`));
      } else {
        finish(lost(error.message));
      }
    });
    ws.on('close', (code: number) => finish(lost(`closed with code ${code} before an exit status`)));
  });
}
