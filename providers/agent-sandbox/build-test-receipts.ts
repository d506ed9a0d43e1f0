// What the helpers answer over exec, parsed strictly and checked against the operation: the
// preparation receipt must name exactly the operation, checkpoint, accepted seed digest, prepared
// path and the command Pod's UID; the collector's answer must be bound to its own Pod UID, the
// operation, checkpoint, request fingerprint and version, and list exactly the declared outputs.
import { z } from 'zod';
import { MAX_DOCUMENT_BYTES } from '../../formats/awscapt2/document-limits.ts';
import type { CollectorFailure, CollectorReceipt, PreparationReceipt } from '../build-test.ts';
import { COLLECTOR_CONTAINER } from './build-test-names.ts';
import type { HelperRequest } from './build-test-pods.ts';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const preparationSchema = z.strictObject({
  operationId: z.string(),
  checkpointId: z.string(),
  sourceSha256: hex64,
  path: z.string(),
  podUid: z.string(),
});

const receiptSchema = z.strictObject({
  podUid: z.string(),
  container: z.string(),
  operationId: z.string(),
  checkpointId: z.string(),
  requestFingerprint: hex64,
  version: z.union([z.literal(1), z.literal(2)]),
  outputs: z.array(z.strictObject({ path: z.string(), size: z.number().int().min(0), sha256: hex64 })),
  // No sealed document is longer than the format allows; a larger length is no capture of ours.
  capture: z
    .strictObject({ sha256: hex64, length: z.number().int().positive().max(MAX_DOCUMENT_BYTES) })
    .nullable(),
});

const answerSchema = z.discriminatedUnion('state', [
  z.strictObject({ state: z.literal('running') }),
  z.strictObject({ state: z.literal('sealed'), receipt: z.unknown() }),
  z.strictObject({
    state: z.literal('failed'),
    reason: z.enum(['missing-output', 'invalid-receipt', 'capture-refused']),
    message: z.string().max(2048),
  }),
]);

function json(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The receipt if it names exactly what the runner expects, or the reason it does not. */
export function checkPreparation(
  answer: Buffer,
  request: HelperRequest,
  podUid: string,
): { receipt: PreparationReceipt } | { refused: string } {
  const parsed = preparationSchema.safeParse(json(answer));
  if (!parsed.success) return { refused: 'the preparation helper answered no readable receipt' };
  const receipt = parsed.data;
  const wrong = [
    receipt.operationId !== request.operationId && 'operationId',
    receipt.checkpointId !== request.checkpointId && 'checkpointId',
    receipt.sourceSha256 !== request.source?.seedSha256 && 'sourceSha256',
    receipt.path !== request.repositoryPath && 'path',
    receipt.podUid !== podUid && 'podUid',
  ].filter((field): field is string => field !== false);
  if (wrong.length > 0) return { refused: `the preparation receipt does not match (${wrong.join(', ')})` };
  return { receipt };
}

/** A stored receipt annotation (written by the runner), or null when absent or unreadable. */
export function storedPreparation(text: string | undefined): PreparationReceipt | null {
  if (text === undefined) return null;
  const parsed = preparationSchema.safeParse(json(Buffer.from(text, 'utf8')));
  return parsed.success ? parsed.data : null;
}

export type CollectorAnswer =
  | { state: 'running' }
  | { state: 'sealed'; receipt: CollectorReceipt }
  | { state: 'failed'; reason: CollectorFailure; message: string };

/** The collector's answer, with a sealed receipt checked binding by binding. */
export function checkCollectorAnswer(
  answer: Buffer,
  request: HelperRequest,
  podUid: string,
): CollectorAnswer {
  const invalid = (message: string): CollectorAnswer => ({
    state: 'failed',
    reason: 'invalid-receipt',
    message,
  });
  const parsed = answerSchema.safeParse(json(answer));
  if (!parsed.success) return invalid('the collector answered nothing readable');
  if (parsed.data.state !== 'sealed') return parsed.data;
  const receipt = receiptSchema.safeParse(parsed.data.receipt);
  if (!receipt.success) return invalid('the collector receipt is malformed');
  const r = receipt.data;
  const declared = [...request.outputs].sort();
  const listed = r.outputs.map((o) => o.path).sort();
  const wrong = [
    r.podUid !== podUid && 'podUid',
    r.container !== COLLECTOR_CONTAINER && 'container',
    r.operationId !== request.operationId && 'operationId',
    r.checkpointId !== request.checkpointId && 'checkpointId',
    r.requestFingerprint !== request.requestFingerprint && 'requestFingerprint',
    r.version !== request.version && 'version',
    (r.version === 2) !== (r.capture !== null) && 'capture',
    (declared.length !== listed.length || declared.some((p, i) => p !== listed[i])) && 'outputs',
  ].filter((field): field is string => field !== false);
  if (wrong.length > 0)
    return invalid(`the collector receipt is not bound to this collector (${wrong.join(', ')})`);
  return { state: 'sealed', receipt: r };
}
