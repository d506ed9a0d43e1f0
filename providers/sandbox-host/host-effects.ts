// The reference host's effects, simulated: a "sandbox" is a JSON record in a directory, keyed by
// the lease (SHA-256 of the envelope's Environment and lease operation). Provision writes one,
// renew rewrites its expiry, describe reads it with what its declared guest reported (host-guest.ts:
// `configured` only from the guest's report), release removes both, listOwned lists those of one
// owner. There is NO guest, VM, container or process here: nothing a tenant sends is executed. This
// exists to prove the durable protocol around effects (verify, journal the intent, act, sign,
// journal, report), not isolation. Invariants:
// - each write is atomic and durable (temporary file, fsync, rename, fsync of the directory);
// - every effect is idempotent: provision over a record with the canonically equal owner reads it
//   back, renew to the same expiry rewrites nothing, release of an absent record says so after an
//   exact lookup;
// - a record is never adopted: provision over a record with another owner fails (`owner-mismatch`)
//   and writes nothing;
// - a spec document that is not the kind's exact shape is a certain failure (`spec-invalid`) with
//   nothing done, never a thrown error (a throw means "outcome unknown" and quarantines the lease).
import { readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { syncPath, writeDurably } from './durable-file.ts';
import { type EnvelopeBody, firstIssue } from './envelope-schema.ts';
import { createReferenceGuest, type HostGuest } from './host-guest.ts';

/** What an effect returns: a certain outcome, the document, and its output in order. */
export interface EffectOutcome {
  status: 'succeeded' | 'failed';
  document: Record<string, unknown>;
  stdout: readonly Uint8Array[];
  stderr: readonly Uint8Array[];
}

/**
 * The host's effects. An effect that throws has an unknown outcome (the host quarantines it). No
 * AbortSignal: once an intent is journaled the host finishes the effect; cancellation stops the
 * host between envelopes, never inside one.
 */
export interface HostEffects {
  provision(body: EnvelopeBody): Promise<EffectOutcome>;
  renew(body: EnvelopeBody): Promise<EffectOutcome>;
  describe(body: EnvelopeBody): Promise<EffectOutcome>;
  release(body: EnvelopeBody): Promise<EffectOutcome>;
  listOwned(body: EnvelopeBody): Promise<EffectOutcome>;
}

const text = z.string().min(1).max(256);
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const instant = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO instant');

/** The owner binding a provision spec carries, exactly (the provider port's OwnerBinding). */
export const sandboxOwnerSchema = z.strictObject({
  tenantId: text,
  projectId: text,
  runId: text,
  environmentId: text,
  ownerHash: text,
  lifecycleGeneration: count,
  resourceGeneration: count,
  providerFence: count,
  operationId: text,
});
export type SandboxOwner = z.infer<typeof sandboxOwnerSchema>;

const jsonObject = z.record(z.string(), z.unknown());

/** The effective spec of each kind, as the sandbox-host provider sends it. */
export const provisionSpecSchema = z.strictObject({
  owner: sandboxOwnerSchema,
  workspace: jsonObject,
  networkPolicyGeneration: count,
  expiresAt: instant.nullable(),
  options: jsonObject,
});
export const renewSpecSchema = z.strictObject({ expiresAt: instant });
export const emptySpecSchema = z.strictObject({});
export const listOwnedSpecSchema = z.strictObject({
  ownerHash: text,
  providerFence: count,
  operationId: text.optional(),
});

export const sandboxRecordSchema = z.strictObject({
  key: z.string().regex(/^[0-9a-f]{64}$/),
  owner: sandboxOwnerSchema,
  expiresAt: instant.nullable(),
  tenantId: text,
  specSha256: z.string().regex(/^[0-9a-f]{64}$/),
  provisionedBy: text,
  createdAt: instant,
});
export type SandboxRecord = z.infer<typeof sandboxRecordSchema>;

const line = (value: string): Uint8Array => Buffer.from(`${value}\n`, 'utf8');

/** The record key of a lease: SHA-256 hex of `<environmentId>\n<leaseOperationId>`. */
export function leaseKey(environmentId: string, leaseOperationId: string): string {
  return sha256Hex(`${environmentId}\n${leaseOperationId}`);
}

const keyOf = (body: EnvelopeBody) => leaseKey(body.lease.environmentId, body.lease.operationId);

const outcome = (
  status: 'succeeded' | 'failed',
  document: Record<string, unknown>,
  stdout: string[],
  stderr: string[] = [],
): EffectOutcome => ({ status, document, stdout: stdout.map(line), stderr: stderr.map(line) });

/** The spec parsed with `schema`, or the certain failure that names the first bad field. */
function specOf<S extends z.ZodType>(
  body: EnvelopeBody,
  schema: S,
): { ok: true; spec: z.infer<S> } | { ok: false; failure: EffectOutcome } {
  const parsed = schema.safeParse(body.effectiveSpec.document);
  if (parsed.success) return { ok: true, spec: parsed.data };
  const message = `${body.operation.kind} spec ${firstIssue(parsed.error)}`;
  return { ok: false, failure: outcome('failed', { code: 'spec-invalid', message }, [], [message]) };
}

/**
 * The simulated effects over `dir` (created if absent). `now` stamps new records. `guest` is the
 * sandboxes' declared guest; by default one that reports nothing by itself (`on-report`).
 */
export function createLocalRecordEffects(
  dir: string,
  now: () => Date,
  guest: HostGuest = createReferenceGuest(dir, 'on-report', now),
): HostEffects {
  const pathOf = (key: string) => join(dir, `${key}.json`);

  async function read(path: string): Promise<SandboxRecord | undefined> {
    try {
      return sandboxRecordSchema.parse(JSON.parse(await readFile(path, 'utf8')));
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  const write = (record: SandboxRecord): Promise<void> =>
    writeDurably(dir, pathOf(record.key), JSON.stringify(sandboxRecordSchema.parse(record)));

  return {
    async provision(body) {
      const parsed = specOf(body, provisionSpecSchema);
      if (!parsed.ok) return parsed.failure;
      const { owner, expiresAt } = parsed.spec;
      if (owner.environmentId !== body.lease.environmentId) {
        const message = 'provision spec owner.environmentId is not the lease Environment';
        return outcome('failed', { code: 'spec-invalid', message }, [], [message]);
      }
      const key = keyOf(body);
      const existing = await read(pathOf(key));
      if (existing !== undefined) {
        if (canonicalJson(existing.owner) !== canonicalJson(owner)) {
          // Never adopted: the lease's record belongs to another owner binding; nothing is written.
          return outcome('failed', { code: 'owner-mismatch' }, [], [`lease ${key} has another owner`]);
        }
        await guest.started(existing);
        return outcome('succeeded', { sandbox: existing, created: false }, [
          `sandbox for lease ${body.lease.operationId} already exists; read back`,
        ]);
      }
      const record: SandboxRecord = {
        key,
        owner,
        expiresAt,
        tenantId: body.tenantId,
        specSha256: body.effectiveSpec.sha256,
        provisionedBy: body.operation.id,
        createdAt: now().toISOString(),
      };
      await write(record);
      await guest.started(record);
      return outcome(
        'succeeded',
        { sandbox: record, created: true },
        [`recorded sandbox for lease ${body.lease.operationId}`, 'no guest was started'],
        ['reference host: simulated effect, no isolation'],
      );
    },

    async renew(body) {
      const parsed = specOf(body, renewSpecSchema);
      if (!parsed.ok) return parsed.failure;
      const existing = await read(pathOf(keyOf(body)));
      if (existing === undefined) {
        return outcome('failed', { code: 'absent' }, [`no sandbox for lease ${body.lease.operationId}`]);
      }
      const renewed = { ...existing, expiresAt: parsed.spec.expiresAt };
      if (existing.expiresAt !== renewed.expiresAt) await write(renewed);
      return outcome('succeeded', { sandbox: renewed }, [`renewed lease ${body.lease.operationId}`]);
    },

    async describe(body) {
      const parsed = specOf(body, emptySpecSchema);
      if (!parsed.ok) return parsed.failure;
      const existing = await read(pathOf(keyOf(body)));
      if (existing === undefined) {
        return outcome('succeeded', { found: false }, [`described lease ${body.lease.operationId}`]);
      }
      const { state, ignored } = await guest.observe(existing);
      return outcome(
        'succeeded',
        { found: true, sandbox: existing, guest: state },
        [`described lease ${body.lease.operationId}: guest ${state.phase}`],
        ignored === null ? [] : [ignored],
      );
    },

    async release(body) {
      const parsed = specOf(body, emptySpecSchema);
      if (!parsed.ok) return parsed.failure;
      const path = pathOf(keyOf(body));
      const existing = await read(path);
      // The guest's report goes first (also one a late guest left behind): it never outlives its record.
      await guest.released(keyOf(body));
      if (existing !== undefined) {
        await unlink(path);
        await syncPath(dir);
      }
      return outcome('succeeded', { released: existing !== undefined, absent: existing === undefined }, [
        `released lease ${body.lease.operationId}`,
      ]);
    },

    async listOwned(body) {
      // The envelope's lease is a placeholder for listOwned: the spec alone selects the records.
      const parsed = specOf(body, listOwnedSpecSchema);
      if (!parsed.ok) return parsed.failure;
      const query = parsed.spec;
      let names: string[];
      try {
        names = (await readdir(dir)).filter((name) => /^[0-9a-f]{64}\.json$/.test(name)).sort();
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
        names = [];
      }
      const sandboxes: SandboxRecord[] = [];
      for (const name of names) {
        const record = await read(join(dir, name));
        if (record === undefined) continue;
        const { owner } = record;
        if (owner.ownerHash !== query.ownerHash || owner.providerFence !== query.providerFence) continue;
        if (query.operationId !== undefined && owner.operationId !== query.operationId) continue;
        sandboxes.push(record);
      }
      return outcome('succeeded', { sandboxes }, [`listed ${sandboxes.length} sandboxes`]);
    },
  };
}
