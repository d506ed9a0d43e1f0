// The reference host's effects, simulated: a "sandbox" is a JSON record in a directory, keyed by
// the lease (Environment and lease operation). Provision writes one, describe reads it, release
// removes it, listOwned lists them. There is NO guest, VM, container or process here: nothing a
// tenant sends is executed. This exists to prove the durable protocol around effects (verify,
// journal the intent, act, sign, journal, report), not isolation. Each write is atomic and durable
// (temporary file, fsync, rename, fsync of the directory), and every step is idempotent: provision
// over an existing record of the same lease reads it back, release of an absent one says so after
// an exact lookup.
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { sha256Hex } from '../../lib/canonical-json.ts';
import type { EnvelopeBody } from './envelope-schema.ts';

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
  describe(body: EnvelopeBody): Promise<EffectOutcome>;
  release(body: EnvelopeBody): Promise<EffectOutcome>;
  listOwned(body: EnvelopeBody): Promise<EffectOutcome>;
}

const sandboxRecordSchema = z.strictObject({
  environmentId: z.string().min(1),
  leaseOperationId: z.string().min(1),
  resourceGeneration: z.number().int().positive(),
  providerFence: z.number().int().positive(),
  tenantId: z.string().min(1),
  provisionedBy: z.string().min(1),
  specSha256: z.string(),
  createdAt: z.string(),
});
export type SandboxRecord = z.infer<typeof sandboxRecordSchema>;

const text = (line: string): Uint8Array => Buffer.from(`${line}\n`, 'utf8');

function leaseKey(body: EnvelopeBody): string {
  return sha256Hex(`${body.lease.environmentId}\n${body.lease.operationId}`);
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The simulated effects over `dir` (created if absent). `now` stamps new records. */
export function createLocalRecordEffects(dir: string, now: () => Date): HostEffects {
  const pathOf = (body: EnvelopeBody) => join(dir, `${leaseKey(body)}.json`);

  async function read(path: string): Promise<SandboxRecord | undefined> {
    try {
      return sandboxRecordSchema.parse(JSON.parse(await readFile(path, 'utf8')));
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async function write(path: string, record: SandboxRecord): Promise<void> {
    await mkdir(dir, { recursive: true });
    const temporary = `${path}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(JSON.stringify(record), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
    await syncPath(dir);
  }

  return {
    async provision(body) {
      const path = pathOf(body);
      const existing = await read(path);
      if (existing !== undefined) {
        return {
          status: 'succeeded',
          document: { sandbox: existing, created: false },
          stdout: [text(`sandbox for lease ${body.lease.operationId} already exists; read back`)],
          stderr: [],
        };
      }
      const record: SandboxRecord = {
        environmentId: body.lease.environmentId,
        leaseOperationId: body.lease.operationId,
        resourceGeneration: body.lease.resourceGeneration,
        providerFence: body.fence.providerFence,
        tenantId: body.tenantId,
        provisionedBy: body.operation.id,
        specSha256: body.effectiveSpec.sha256,
        createdAt: now().toISOString(),
      };
      await write(path, record);
      return {
        status: 'succeeded',
        document: { sandbox: record, created: true },
        stdout: [text(`recorded sandbox for lease ${body.lease.operationId}`), text('no guest was started')],
        stderr: [text('reference host: simulated effect, no isolation')],
      };
    },

    async describe(body) {
      const existing = await read(pathOf(body));
      return {
        status: 'succeeded',
        document: existing === undefined ? { found: false } : { found: true, sandbox: existing },
        stdout: [text(`described lease ${body.lease.operationId}`)],
        stderr: [],
      };
    },

    async release(body) {
      const path = pathOf(body);
      const existing = await read(path);
      if (existing !== undefined) {
        await unlink(path);
        await syncPath(dir);
      }
      return {
        status: 'succeeded',
        document: { released: existing !== undefined, absent: existing === undefined },
        stdout: [text(`released lease ${body.lease.operationId}`)],
        stderr: [],
      };
    },

    async listOwned() {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
        names = [];
      }
      const sandboxes: SandboxRecord[] = [];
      for (const name of names) {
        const record = await read(join(dir, name));
        if (record !== undefined) sandboxes.push(record);
      }
      return {
        status: 'succeeded',
        document: { sandboxes },
        stdout: [text(`listed ${sandboxes.length} sandboxes`)],
        stderr: [],
      };
    },
  };
}
