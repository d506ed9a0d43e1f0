// What a container "does" when a test execs into it: a handler chosen by container name. The
// session (exec-session.ts) owns the WebSocket; a handler only sees the Pod, the argv, stdin, and
// writers for stdout and stderr, and returns an exit code. Two deterministic handlers ship here.
import { createHash } from 'node:crypto';
import type { KubeObject } from './types.ts';

/** The Pod annotations the built-in handlers read (the argv stays fixed per container). */
export const EXEC_ANNOTATIONS = {
  requestFingerprint: 'sandlot.dev/request-fingerprint',
  operationId: 'sandlot.dev/operation-id',
  checkpointId: 'sandlot.dev/checkpoint-id',
  seedPath: 'sandlot.dev/seed-path',
} as const;

export interface ExecContext {
  /** A copy of the Pod as stored when the session opened (metadata.uid included). */
  pod: KubeObject;
  container: string;
  /** The `command` query parameters, in order. */
  command: readonly string[];
  /** Stdin chunks; ends when the client closes stdin, throws if the connection is lost first. */
  stdin: AsyncIterable<Buffer>;
  /** All of stdin, once the client closed it. */
  readStdin(): Promise<Buffer>;
  stdout(data: string | Uint8Array): Promise<void>;
  stderr(data: string | Uint8Array): Promise<void>;
  /** Writes the identity line `{"podUid","requestFingerprint"}\n` on stdout for this Pod. */
  identify(requestFingerprint: string): Promise<void>;
}

/** An exit code (0 is Success), with an optional message for a non-zero one. */
export type ExecResult = number | { exitCode: number; message?: string };

export type ExecHandler = (context: ExecContext) => Promise<ExecResult>;

/** Stdin's SHA-256 (hex) and length, read chunk by chunk so a 64 MiB payload is never held whole. */
export async function digestStdin(context: ExecContext): Promise<{ sha256: string; length: number }> {
  const hash = createHash('sha256');
  let length = 0;
  for await (const chunk of context.stdin) {
    hash.update(chunk);
    length += chunk.length;
  }
  return { sha256: hash.digest('hex'), length };
}

function annotation(context: ExecContext, key: string): string | undefined {
  return context.pod.metadata.annotations?.[key];
}

/**
 * The preparation helper: identifies with the Pod's UID and its `request-fingerprint` annotation,
 * reads the whole seed from stdin and answers one JSON receipt line. Exit 2 when an annotation is
 * missing (before any identity, so the client sends nothing).
 */
export const preparationHandler: ExecHandler = async (context) => {
  const fingerprint = annotation(context, EXEC_ANNOTATIONS.requestFingerprint);
  const operationId = annotation(context, EXEC_ANNOTATIONS.operationId);
  const checkpointId = annotation(context, EXEC_ANNOTATIONS.checkpointId);
  if (fingerprint === undefined || operationId === undefined || checkpointId === undefined) {
    await context.stderr('preparation: the Pod lacks its request annotations\n');
    return { exitCode: 2, message: 'missing request annotations' };
  }
  await context.identify(fingerprint);
  const { sha256, length } = await digestStdin(context);
  const receipt = {
    operationId,
    checkpointId,
    sourceSha256: sha256,
    length,
    path: annotation(context, EXEC_ANNOTATIONS.seedPath) ?? '/workspace/.sandlot/seed.bundle',
    podUid: context.pod.metadata.uid,
  };
  await context.stdout(`${JSON.stringify(receipt)}\n`);
  return 0;
};

/**
 * For tests of the transport: identifies with the `request-fingerprint` annotation (empty when
 * absent), answers `{"sha256","length","command"}` for stdin, and notes the length on stderr.
 */
export const echoDigestHandler: ExecHandler = async (context) => {
  await context.identify(annotation(context, EXEC_ANNOTATIONS.requestFingerprint) ?? '');
  const { sha256, length } = await digestStdin(context);
  await context.stderr(`echo-digest: read ${length} bytes\n`);
  await context.stdout(`${JSON.stringify({ sha256, length, command: context.command })}\n`);
  return 0;
};

/** The registry a fake starts with: containers named `preparation` and `echo-digest`. */
export function defaultExecHandlers(): Map<string, ExecHandler> {
  return new Map<string, ExecHandler>([
    ['preparation', preparationHandler],
    ['echo-digest', echoDigestHandler],
  ]);
}
