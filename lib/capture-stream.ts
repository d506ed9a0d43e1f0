// A sealed capture read back as a stream: its bytes pass through in order, and the last chunk is
// held back until the whole length and the SHA-256 digest are checked, so a reader never holds
// the complete document unless it is exactly the sealed one. A stream that runs long fails at the
// first extra byte; one that ends short or with another digest fails instead of its last chunk.
import { createHash } from 'node:crypto';

export interface CaptureExpectation {
  length: number;
  sha256: string;
}

/**
 * The chunks of `source`, the last one only after the length and the digest matched (and after
 * `beforeLast`, a check the caller makes before it lets the document complete). `mismatch` makes
 * the error thrown instead.
 */
export async function* verifiedCapture(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  expected: CaptureExpectation,
  mismatch: (why: string) => Error,
  beforeLast?: () => Promise<void>,
): AsyncGenerator<Uint8Array, void, undefined> {
  const digest = createHash('sha256');
  let seen = 0;
  let held: Uint8Array | null = null;
  for await (const chunk of source) {
    if (chunk.length === 0) continue;
    seen += chunk.length;
    if (seen > expected.length) throw mismatch(`more than the sealed ${expected.length} bytes`);
    digest.update(chunk);
    if (held !== null) yield held;
    held = chunk;
  }
  if (seen !== expected.length) throw mismatch(`${seen} of the sealed ${expected.length} bytes`);
  if (digest.digest('hex') !== expected.sha256) throw mismatch('another SHA-256 than the sealed one');
  await beforeLast?.();
  if (held !== null) yield held;
}

/** Slices of `bytes`, at most `size` each (a stored document handed out as a stream). */
export function* chunksOfBytes(bytes: Uint8Array, size = 64 * 1024): Generator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

/** The whole stream in one buffer (tests, and callers that need the document at once). */
export async function collectCapture(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return Buffer.concat(parts);
}
