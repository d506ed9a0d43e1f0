// How the sandbox-host provider reads what hosts answer and what the assignment store holds: the
// owner and sandbox record shapes, the lease key and resource id, refusals that prove no effect,
// and the stored verified result of an attempt. Pure reads; the provider decides what to do.
import { z } from 'zod';
import { sha256Hex } from '../../lib/canonical-json.ts';
import type { AttemptRow } from '../../store/sandbox-host-provider.ts';
import { uncertain } from '../errors.ts';
import { pickOwner } from '../owner-binding.ts';
import type { OwnerBinding, ProviderResource } from '../provider.ts';
import { type HostResultBody, hostResultWireSchema } from './host-result.ts';

export const ownerSchema = z.strictObject({
  tenantId: z.string(),
  projectId: z.string(),
  runId: z.string(),
  environmentId: z.string(),
  ownerHash: z.string(),
  lifecycleGeneration: z.number(),
  resourceGeneration: z.number(),
  providerFence: z.number(),
  operationId: z.string(),
});

/** What a host's record says of a sandbox (the host may add fields; these are the ones relied on). */
export const sandboxSchema = z.object({
  key: z.string().regex(/^[0-9a-f]{64}$/),
  owner: ownerSchema,
  expiresAt: z.string().nullable(),
});
export type SandboxRecord = z.infer<typeof sandboxSchema>;

/**
 * What a host-signed describe says of the sandbox's guest: `configured` once the guest reported it.
 * A host that sends no `guest` member says nothing of it (started); one it cannot read is refused.
 */
export const guestSchema = z.discriminatedUnion('phase', [
  z.object({ phase: z.literal('started') }),
  z.object({ phase: z.literal('configured'), configuredAt: z.string() }),
]);

export const failureSchema = z.object({ code: z.string(), refusal: z.string().optional() });

/** The owner binding's own fields, checked, in a fixed shape (a caller's object may carry more). */
export const ownerOf = (owner: OwnerBinding): OwnerBinding => ownerSchema.parse(pickOwner(owner));

/** The host's record key for a lease: SHA-256 of its Environment and lease operation. */
export function leaseKey(owner: Pick<OwnerBinding, 'environmentId' | 'operationId'>): string {
  return sha256Hex(`${owner.environmentId}\n${owner.operationId}`);
}

/** `<hostId>/<lease key>`: where the sandbox lives and which lease it is. */
export function parseResourceId(resourceId: string): { hostId: string; key: string } | null {
  const slash = resourceId.lastIndexOf('/');
  if (slash <= 0) return null;
  const key = resourceId.slice(slash + 1);
  return /^[0-9a-f]{64}$/.test(key) ? { hostId: resourceId.slice(0, slash), key } : null;
}

export function refusalOf(body: HostResultBody): string | null {
  if (body.outcome.status !== 'failed') return null;
  const failure = failureSchema.safeParse(body.outcome.document);
  if (!failure.success) return null;
  if (failure.data.code === 'not-started' || failure.data.code === 'interrupted-read')
    return failure.data.code;
  return failure.data.code === 'refused' ? (failure.data.refusal ?? 'refused') : null;
}

/** A host answer that proves nothing ran: a new attempt may follow at once, in the same call. */
export function noEffect(body: HostResultBody): boolean {
  const refusal = refusalOf(body);
  return refusal === 'not-started' || refusal === 'expired' || refusal === 'interrupted-read';
}

/**
 * An answer after which the next call may try again under a new attempt: no effect ran, or the
 * host held the Environment quarantined. The host refuses every new attempt for a quarantined
 * Environment until an operator confirms its cleanup, so trying again can never run the uncertain
 * effect twice; once the cleanup is confirmed, the new attempt is the reassignment.
 */
export function reissuable(body: HostResultBody): boolean {
  return noEffect(body) || body.outcome.status === 'uncertain' || refusalOf(body) === 'lease-quarantined';
}

/** The verified result stored with an attempt, or null while it is still Issued. */
export function resultOf(row: AttemptRow): HostResultBody | null {
  if (row.state !== 'Reported') return null;
  const parsed = hostResultWireSchema.safeParse(row.result);
  if (!parsed.success)
    throw uncertain('store-inconsistent', `stored result of ${row.operationId} is unreadable`);
  return parsed.data.body;
}

/** The owner a stored provision envelope was issued for. */
export function storedOwner(row: AttemptRow): OwnerBinding | null {
  const parsed = z
    .object({ body: z.object({ effectiveSpec: z.object({ document: z.object({ owner: ownerSchema }) }) }) })
    .safeParse(row.envelope);
  return parsed.success ? parsed.data.body.effectiveSpec.document.owner : null;
}

/** The failure code of a result, `uncertain` for a quarantine, or null when it succeeded. */
export function failureOf(body: HostResultBody): string | null {
  if (body.outcome.status === 'succeeded') return null;
  if (body.outcome.status === 'uncertain') {
    throw uncertain(
      'host-quarantined',
      'the host holds this Environment as uncertain until an operator cleans it up',
    );
  }
  const failure = failureSchema.safeParse(body.outcome.document);
  if (!failure.success) return 'failed';
  if (failure.data.code === 'refused') {
    const refusal = failure.data.refusal ?? 'refused';
    if (refusal === 'lease-quarantined') {
      throw uncertain(
        'host-quarantined',
        'the host holds this Environment as uncertain until an operator cleans it up',
      );
    }
    return refusal;
  }
  return failure.data.code;
}

export function sandboxIn(body: HostResultBody, field: string): SandboxRecord | null {
  const parsed = sandboxSchema.safeParse(body.outcome.document[field]);
  return parsed.success ? parsed.data : null;
}

/** A recorded sandbox is started; only a describe can say its guest is `configured`. */
export function toResource(
  hostId: string,
  sandbox: SandboxRecord,
  phase: 'started' | 'configured' = 'started',
): ProviderResource {
  return {
    resourceId: `${hostId}/${sandbox.key}`,
    owner: sandbox.owner,
    phase,
    placement: { hostId, sandboxKey: sandbox.key },
  };
}
