// The command's log on Kubernetes, read back from the log subresource once the command exited, and
// bounded by the profile's maxLogBytes. The API cannot send the last N bytes of a log: `tailLines`
// picks the last lines and `limitBytes` keeps the first bytes of those. So the runner asks for the
// last lines with one byte of room past the limit, fewer lines each time (LINE_STEPS) until they
// fit: the first answer that fits is exactly the end of the log. When even the last two lines do
// not fit, the last line is kept, or its first maxLogBytes bytes when it alone is longer. Each read moves at most
// maxLogBytes + 1 bytes, and every read together shares one short deadline (LOG_READ_MS).
//
// The log is never evidence: a read that fails (a node gone, a refusal, an outage, its own deadline)
// yields an empty log marked `unavailable` with the failure's code, and the exit code stands. Only
// the caller's own cancellation or deadline is thrown, like any other cut of the observation.
import { hasTimeLeft, narrowed } from '../call-budget.ts';
import type { CommandLog } from '../build-test.ts';
import { ProviderError } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { BuildTestKube } from './build-test-kube.ts';
import { COMMAND_CONTAINER } from './build-test-names.ts';

/** Line counts asked for, most first (each read asks one more, to tell whether earlier ones exist). */
export const LINE_STEPS = [65_536, 4_096, 256, 16, 1] as const;
/** How long all of one observation's log reads may take together. */
export const LOG_READ_MS = 10_000;

const NEWLINE = 0x0a;

/** Whether `byte` continues a UTF-8 character (so a cut there would split one). */
const continues = (byte: number | undefined) => byte !== undefined && (byte & 0xc0) === 0x80;

function lineCount(bytes: Buffer): number {
  let count = 0;
  for (const byte of bytes) if (byte === NEWLINE) count += 1;
  return bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE ? count + 1 : count;
}

/**
 * What one read of the last `lines + 1` lines (asked with `limitBytes` one past `maxBytes`) gives:
 * the log's tail when the answer fits in `maxBytes` (so the server cut nothing), or null. The extra
 * line, when it came, only says that earlier output exists: it is dropped.
 */
export function tailOf(read: Buffer, lines: number, maxBytes: number): CommandLog | null {
  if (read.length > maxBytes) return null;
  const more = lineCount(read) > lines;
  const kept = more ? read.subarray(read.indexOf(NEWLINE) + 1) : read;
  return { bytes: kept.length, truncated: more, tail: kept.toString('utf8') };
}

/**
 * The last resort, once even the last two lines did not fit (so earlier output exists): the last
 * line, or its first `maxBytes` bytes cut at a character boundary when it is longer.
 */
export function lastLineOf(read: Buffer, maxBytes: number): CommandLog {
  let end = Math.min(read.length, maxBytes);
  if (end < read.length) while (end > 0 && continues(read[end])) end -= 1;
  const kept = read.subarray(0, end);
  return { bytes: kept.length, truncated: true, tail: kept.toString('utf8') };
}

export const unavailableLog = (code: string): CommandLog => ({
  bytes: 0,
  truncated: false,
  tail: '',
  unavailable: code,
});

export async function readCommandLog(
  pods: BuildTestKube,
  namespace: string,
  podName: string,
  maxBytes: number | null,
  options: CallOptions,
): Promise<CommandLog> {
  if (maxBytes === null) return unavailableLog('no-log-limit');
  const reads = narrowed(options, LOG_READ_MS);
  const read = (tailLines: number, limitBytes: number) =>
    pods.readPodLog(namespace, podName, { container: COMMAND_CONTAINER, tailLines, limitBytes }, reads);
  try {
    for (const lines of LINE_STEPS) {
      const log = tailOf(await read(lines + 1, maxBytes + 1), lines, maxBytes);
      if (log !== null) return log;
    }
    return lastLineOf(await read(1, maxBytes + 1), maxBytes);
  } catch (error) {
    // The caller's own cut is the observation's: thrown, so nothing is recorded from it.
    if (options.signal.aborted || !hasTimeLeft(options.deadline)) throw error;
    return unavailableLog(error instanceof ProviderError ? error.code : 'adapter-error');
  }
}
