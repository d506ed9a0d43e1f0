// One exec session on an upgraded WebSocket, speaking `v5.channel.k8s.io`: every frame starts with
// its channel (0 stdin, 1 stdout, 2 stderr, 3 status, 4 resize, 255 close). The client ends stdin
// with the frame [255, 0]. The session feeds stdin to the container's handler with back-pressure,
// frames what it writes, and ends with a Status on channel 3, then a normal close.
import type { WebSocket } from 'ws';
import type { ExecFault } from './exec-faults.ts';
import type { ExecContext, ExecHandler, ExecResult } from './exec-handlers.ts';
import type { KubeObject } from './types.ts';

/** What a test can check after the fact; updated while the session runs. */
export interface ExecSession {
  namespace: string;
  pod: string;
  podUid: string;
  container: string;
  command: string[];
  fault?: ExecFault['kind'];
  /** Stdin bytes that reached the session (and so could reach the handler). */
  stdinBytes: number;
  stdinClosed: boolean;
  /** The Status sent on channel 3, if one was. */
  status?: Record<string, unknown>;
  outcome: 'open' | 'completed' | 'dropped' | 'stalled' | 'client-closed';
}

const MAX_FRAME = 1024 * 1024;
const PAUSE_ABOVE = 4 * 1024 * 1024;
const RESUME_BELOW = 1024 * 1024;

/** Stdin as one async iterable, pausing the socket while the handler lags behind. */
class StdinQueue implements AsyncIterable<Buffer> {
  private readonly chunks: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly ws: WebSocket) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.queued += chunk.length;
    if (this.queued > PAUSE_ABOVE) this.ws.pause();
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  fail(error: Error): void {
    if (!this.ended) this.error = error;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        this.queued -= chunk.length;
        if (this.queued < RESUME_BELOW) this.ws.resume();
        yield chunk;
        continue;
      }
      if (this.error) throw this.error;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

function statusOf(result: ExecResult): Record<string, unknown> {
  const { exitCode, message } =
    typeof result === 'number' ? { exitCode: result, message: undefined } : result;
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: ${message ?? `exit code ${exitCode}`}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

function internalError(error: unknown): Record<string, unknown> {
  const message = error instanceof Error ? error.message : String(error);
  return {
    metadata: {},
    status: 'Failure',
    message,
    reason: 'InternalError',
    details: { causes: [{ message }] },
  };
}

export function runExecSession(
  ws: WebSocket,
  pod: KubeObject,
  session: ExecSession,
  handler: ExecHandler | undefined,
  fault: ExecFault | undefined,
): void {
  const stdin = new StdinQueue(ws);
  let withheld = fault?.kind === 'stall' && fault.after === 'upgrade';
  const write = (channel: number, data: string | Uint8Array) => {
    const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
    return sendFrames(channel, bytes);
  };
  const sendFrames = async (channel: number, bytes: Buffer) => {
    for (let offset = 0; offset === 0 || offset < bytes.length; offset += MAX_FRAME) {
      if (withheld) return;
      if (ws.readyState !== ws.OPEN) throw new Error('the exec connection is closed');
      const piece = bytes.subarray(offset, offset + MAX_FRAME);
      await new Promise<void>((resolve, reject) =>
        ws.send(Buffer.concat([Buffer.of(channel), piece]), { binary: true }, (error) =>
          error ? reject(error) : resolve(),
        ),
      );
    }
  };

  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    const body = data.subarray(1);
    if (channel === 0 && !session.stdinClosed) {
      const limit = fault?.kind === 'drop-after-stdin-bytes' ? fault.bytes : Infinity;
      const room = limit - session.stdinBytes;
      const kept = body.subarray(0, Math.max(0, room));
      session.stdinBytes += kept.length;
      if (kept.length > 0) stdin.push(Buffer.from(kept));
      if (body.length > room) {
        session.outcome = 'dropped';
        ws.terminate();
      }
    } else if (channel === 255 && body[0] === 0) {
      session.stdinClosed = true;
      stdin.end();
    }
  });
  ws.on('close', () => {
    if (session.outcome === 'open') session.outcome = 'client-closed';
    stdin.fail(new Error('the exec connection closed before stdin did'));
  });

  // Opens the channels the server writes on, as empty frames; clients must tolerate them.
  for (const channel of [1, 2, 3]) ws.send(Buffer.of(channel), { binary: true });
  if (withheld) {
    session.outcome = 'stalled';
    return;
  }

  const context: ExecContext = {
    pod,
    container: session.container,
    command: session.command,
    stdin,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of stdin) chunks.push(chunk);
      return Buffer.concat(chunks);
    },
    stdout: (data) => write(1, data),
    stderr: (data) => write(2, data),
    identify: async (requestFingerprint) => {
      const claimed = { podUid: pod.metadata.uid, requestFingerprint };
      if (fault?.kind === 'wrong-identity') {
        if (fault.podUid !== undefined) claimed.podUid = fault.podUid;
        if (fault.requestFingerprint !== undefined) claimed.requestFingerprint = fault.requestFingerprint;
      }
      await write(1, `${JSON.stringify(claimed)}\n`);
      if (fault?.kind === 'stall' && fault.after === 'identity') {
        withheld = true;
        session.outcome = 'stalled';
      }
    },
  };

  const run = handler
    ? handler(context).then((result) =>
        fault?.kind === 'exit' ? statusOf({ exitCode: fault.exitCode }) : statusOf(result),
      )
    : Promise.resolve(internalError(`no exec handler is registered for container "${session.container}"`));
  void run
    .catch((error: unknown) => internalError(error))
    .then(async (status) => {
      if (withheld || ws.readyState !== ws.OPEN) return;
      session.status = status;
      await sendFrames(3, Buffer.from(JSON.stringify(status)));
      session.outcome = 'completed';
      ws.close(1000);
    })
    .catch(() => {
      // The client went away while the status was being sent: recorded by the close handler.
    });
}
