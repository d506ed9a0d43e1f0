// A sealed capture read back as a stream (lib/capture-stream.ts): the last chunk only after
// the length and digest matched, and a stream that is not the sealed document fails instead of it.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chunksOfBytes, collectCapture, verifiedCapture } from '../../lib/capture-stream.ts';

const document = Buffer.from('AWSCAPT2'.repeat(40));
const expected = { length: document.length, sha256: createHash('sha256').update(document).digest('hex') };
const mismatch = (why: string) => new Error(`mismatch: ${why}`);

/** What a reader received before the stream ended or failed, and how it ended. */
async function read(stream: AsyncIterable<Uint8Array>) {
  const got: Buffer[] = [];
  try {
    for await (const chunk of stream) got.push(Buffer.from(chunk));
    return { got: Buffer.concat(got), error: null };
  } catch (error) {
    return { got: Buffer.concat(got), error: (error as Error).message };
  }
}

describe('verifiedCapture', () => {
  it('passes the exact document through, chunk by chunk, the last one after the check', async () => {
    const checks: number[] = [];
    let received = 0;
    const stream = verifiedCapture(chunksOfBytes(document, 64), expected, mismatch, () => {
      checks.push(received);
      return Promise.resolve();
    });
    for await (const chunk of stream) received += chunk.length;
    expect(received).toBe(document.length);
    // The closing check ran once, when everything but the last chunk had been handed over.
    expect(checks).toEqual([document.length - (document.length % 64 || 64)]);
  });

  it('fails instead of the last chunk when the digest differs', async () => {
    const other = Buffer.from(document);
    other[other.length - 1] = (other[other.length - 1] ?? 0) ^ 0x01;
    const { got, error } = await read(verifiedCapture(chunksOfBytes(other, 64), expected, mismatch));
    expect(error).toBe('mismatch: another SHA-256 than the sealed one');
    expect(got.length).toBeLessThan(document.length);
    expect(got.equals(other.subarray(0, got.length))).toBe(true);
  });

  it('fails at the first byte past the sealed length, and when the stream ends short', async () => {
    const long = await read(
      verifiedCapture(chunksOfBytes(Buffer.concat([document, Buffer.from('x')]), 64), expected, mismatch),
    );
    expect(long.error).toBe(`mismatch: more than the sealed ${document.length} bytes`);
    expect(long.got.length).toBeLessThan(document.length);
    const short = await read(verifiedCapture(chunksOfBytes(document.subarray(1), 64), expected, mismatch));
    expect(short.error).toBe(`mismatch: ${document.length - 1} of the sealed ${document.length} bytes`);
  });

  it('a failing closing check keeps the last chunk back', async () => {
    const refused = () => Promise.reject(new Error('forbidden'));
    const { got, error } = await read(
      verifiedCapture(chunksOfBytes(document, 64), expected, mismatch, refused),
    );
    expect(error).toBe('forbidden');
    expect(got.length).toBeLessThan(document.length);
  });

  it('a document in one chunk is checked whole before any byte leaves', async () => {
    expect(await collectCapture(verifiedCapture(chunksOfBytes(document), expected, mismatch))).toEqual(
      document,
    );
    const other = Buffer.from(document).fill(0x61, 0, 1);
    expect((await read(verifiedCapture(chunksOfBytes(other), expected, mismatch))).got.length).toBe(0);
  });
});
