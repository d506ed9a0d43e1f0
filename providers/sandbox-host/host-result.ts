// Host-signed results. A host answers an accepted envelope with a result bound to that envelope's
// digest and signed with the host's own Ed25519 key, so the control plane can tell a result from
// another host, or for another assignment, from the real one. Output travels as ordered chunks per
// stream, each carrying a running SHA-256 chain link (the stream's "integrity header"): the chain
// starts from a genesis bound to the envelope and stream, so a chunk moved, dropped, reordered or
// spliced from another stream or assignment breaks it, and chunks can be checked one by one as
// they arrive, before the signed result that closes them.
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { sha256Hex } from '../../lib/canonical-json.ts';
import { EnvelopeSigningError, HostResultRefusedError } from './errors.ts';
import { firstIssue, signedWireSchema } from './envelope-schema.ts';
import {
  isCanonicalBase64url,
  isCanonicalInstant,
  isEd25519Key,
  isPlainJson,
  PROTOCOL,
  SHA256_HEX_PATTERN,
  signCanonical,
  verifyCanonical,
} from './signing.ts';

export const STREAMS = ['stdout', 'stderr'] as const;
export type StreamName = (typeof STREAMS)[number];
/**
 * `uncertain`: the host journaled its started intent but has no result (it stopped in between, or
 * the effect threw), so it cannot say whether the effect happened; the operation is quarantined.
 */
export const RESULT_STATUSES = ['started', 'succeeded', 'failed', 'uncertain'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];
/** At most 64 KiB of output per chunk (87,382 base64url characters). */
export const MAX_CHUNK_BYTES = 65_536;

const sha256 = z.string().regex(SHA256_HEX_PATTERN);
const positive = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

const chunkSchema = z.strictObject({
  index: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  data: z
    .string()
    .max(Math.ceil((MAX_CHUNK_BYTES * 4) / 3))
    .refine(isCanonicalBase64url, 'canonical unpadded base64url'),
  chainSha256: sha256,
});
export type OutputChunk = z.infer<typeof chunkSchema>;

const headerSchema = z.strictObject({ chunks: z.number().int().nonnegative(), headSha256: sha256 });

export const hostResultBodySchema = z.strictObject({
  protocol: z.literal(PROTOCOL),
  hostId: z.string().min(1).max(256),
  hostKeyVersion: positive,
  operationId: z.string().min(1).max(256),
  envelopeDigest: sha256,
  outcome: z.strictObject({
    status: z.enum(RESULT_STATUSES),
    document: z.record(z.string(), z.unknown()).refine(isPlainJson, 'plain JSON'),
  }),
  streams: z.strictObject({ stdout: z.array(chunkSchema), stderr: z.array(chunkSchema) }),
  integrity: z.strictObject({ stdout: headerSchema, stderr: headerSchema }),
  completedAt: z.string().refine(isCanonicalInstant, 'a canonical ISO instant'),
});
export type HostResultBody = z.infer<typeof hostResultBodySchema>;

export const hostResultWireSchema = signedWireSchema(hostResultBodySchema);
export type HostResultWire = z.infer<typeof hostResultWireSchema>;

/** Where a stream's chain stands: the next index expected and the last link. */
export interface ChunkChain {
  readonly stream: StreamName;
  readonly nextIndex: number;
  readonly headSha256: string;
}

/** The chain before any chunk: bound to the protocol, the stream and the envelope. */
export function startChain(stream: StreamName, envelopeDigest: string): ChunkChain {
  return Object.freeze({
    stream,
    nextIndex: 0,
    headSha256: sha256Hex(`${PROTOCOL}\n${stream}\n${envelopeDigest}`),
  });
}

function link(previous: string, index: number, data: string): string {
  return sha256Hex(`${previous}\n${index}\n${sha256Hex(data)}`);
}

/** The host side: the chunk that carries these bytes next, and the chain after it. */
export function appendChunk(chain: ChunkChain, bytes: Uint8Array): { chain: ChunkChain; chunk: OutputChunk } {
  if (bytes.length > MAX_CHUNK_BYTES) {
    throw new EnvelopeSigningError(`an output chunk holds at most ${MAX_CHUNK_BYTES} bytes`);
  }
  const data = Buffer.from(bytes).toString('base64url');
  const chainSha256 = link(chain.headSha256, chain.nextIndex, data);
  return {
    chain: Object.freeze({ stream: chain.stream, nextIndex: chain.nextIndex + 1, headSha256: chainSha256 }),
    chunk: Object.freeze({ index: chain.nextIndex, data, chainSha256 }),
  };
}

export type ChunkVerdict = { ok: true; chain: ChunkChain } | { ok: false; error: HostResultRefusedError };

/** The receiving side: one chunk checked against the chain so far. */
export function acceptChunk(chain: ChunkChain, chunk: OutputChunk): ChunkVerdict {
  if (chunk.index !== chain.nextIndex) {
    const message = `${chain.stream} chunk ${chunk.index} arrived where ${chain.nextIndex} was due`;
    return { ok: false, error: new HostResultRefusedError('chunk-out-of-order', message) };
  }
  const expected = link(chain.headSha256, chunk.index, chunk.data);
  if (expected !== chunk.chainSha256) {
    const message = `${chain.stream} chunk ${chunk.index} does not extend the chain`;
    return { ok: false, error: new HostResultRefusedError('chunk-chain-broken', message) };
  }
  return {
    ok: true,
    chain: Object.freeze({ stream: chain.stream, nextIndex: chain.nextIndex + 1, headSha256: expected }),
  };
}

export interface HostSigner {
  hostId: string;
  version: number;
  privateKey: KeyObject;
}

export interface HostResultInput {
  operationId: string;
  envelopeDigest: string;
  status: ResultStatus;
  document: Record<string, unknown>;
  /** Output in the order it was produced, one entry per chunk. */
  stdout: readonly Uint8Array[];
  stderr: readonly Uint8Array[];
  completedAt: Date;
}

/** Builds the chunk chains and integrity headers, then signs the result with the host's key. */
export function signHostResult(input: HostResultInput, signer: HostSigner): HostResultWire {
  if (!isEd25519Key(signer.privateKey, 'private')) {
    throw new EnvelopeSigningError('the host signing key is not an Ed25519 private key');
  }
  const streams = { stdout: [] as OutputChunk[], stderr: [] as OutputChunk[] };
  const integrity = {} as Record<StreamName, { chunks: number; headSha256: string }>;
  for (const stream of STREAMS) {
    let chain = startChain(stream, input.envelopeDigest);
    for (const bytes of input[stream]) {
      const next = appendChunk(chain, bytes);
      streams[stream].push(next.chunk);
      chain = next.chain;
    }
    integrity[stream] = { chunks: chain.nextIndex, headSha256: chain.headSha256 };
  }
  const parsed = hostResultBodySchema.safeParse({
    protocol: PROTOCOL,
    hostId: signer.hostId,
    hostKeyVersion: signer.version,
    operationId: input.operationId,
    envelopeDigest: input.envelopeDigest,
    outcome: { status: input.status, document: input.document },
    streams,
    integrity,
    completedAt: input.completedAt.toISOString(),
  });
  if (!parsed.success) throw new EnvelopeSigningError(`host result ${firstIssue(parsed.error)}`);
  return {
    body: parsed.data,
    signature: signCanonical(parsed.data, signer.privateKey),
    keyVersion: signer.version,
  };
}

export interface HostVerificationKey {
  hostId: string;
  version: number;
  publicKey: KeyObject;
}

export interface ResultExpectation {
  hostId: string;
  operationId: string;
  envelopeDigest: string;
}

export type HostResultVerdict =
  | { ok: true; result: HostResultWire }
  | { ok: false; code: HostResultRefusedError['code']; error: HostResultRefusedError };

const refuse = (code: HostResultRefusedError['code'], message: string): HostResultVerdict => {
  const error = new HostResultRefusedError(code, message);
  return { ok: false, code, error };
};

/** Replays a stream's chunks through the chain; the header must name the final link and count. */
function checkStream(body: HostResultBody, stream: StreamName): HostResultVerdict | undefined {
  let chain = startChain(stream, body.envelopeDigest);
  for (const chunk of body.streams[stream]) {
    const verdict = acceptChunk(chain, chunk);
    if (!verdict.ok) return { ok: false, code: verdict.error.code, error: verdict.error };
    chain = verdict.chain;
  }
  const header = body.integrity[stream];
  if (header.chunks !== chain.nextIndex || header.headSha256 !== chain.headSha256) {
    return refuse('chunk-chain-broken', `${stream} integrity header does not match its chunks`);
  }
  return undefined;
}

/**
 * Verifies a host result against the host's known keys (any versions the enrollment trusts) and
 * the assignment it must answer. Never throws on input; a refusal is returned as data.
 */
export function verifyHostResult(
  wire: unknown,
  hostKeys: readonly HostVerificationKey[],
  expectation: ResultExpectation,
): HostResultVerdict {
  const parsed = hostResultWireSchema.safeParse(wire);
  if (!parsed.success) return refuse('result-malformed', firstIssue(parsed.error));
  const result = parsed.data;
  const { body } = result;
  if (result.keyVersion !== body.hostKeyVersion) {
    return refuse('result-malformed', 'keyVersion differs from body.hostKeyVersion');
  }
  const key = hostKeys.find((k) => k.hostId === body.hostId && k.version === result.keyVersion);
  if (key === undefined) {
    return refuse('result-key-unknown', `host key version ${result.keyVersion} is not trusted for the host`);
  }
  if (!verifyCanonical(body, result.signature, key.publicKey)) {
    return refuse('result-signature-invalid', `signature does not verify under host key ${key.version}`);
  }
  for (const field of ['hostId', 'operationId', 'envelopeDigest'] as const) {
    if (body[field] !== expectation[field]) {
      return refuse('result-binding-mismatch', `${field} is not the one the assignment expects`);
    }
  }
  for (const stream of STREAMS) {
    const broken = checkStream(body, stream);
    if (broken !== undefined) return broken;
  }
  return { ok: true, result };
}
