// The AgentHost Workspace contract (flush and the read-only Workspace resume): one suite, run
// against every implementation of the port. Each case takes a fresh started lease whose Host keeps
// a real Workspace tree on disk, writes files into it, and asks through the port only; the tree hash
// (in a flush receipt and in a resume's content proof) is checked against an independent reading of
// the directory written out here from the definition.
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import {
  AgentHostFlushRefusedError,
  AgentHostUnavailableError,
  AgentHostWorkspaceResumeRefusedError,
} from '../../actors/agenthost/flush.ts';
import type { AgentHost, AgentHostFlushRequest, AgentHostWorkspaceBinding } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { insertLease } from '../../store/leases.ts';
import { rejection } from '../support/rejection.ts';

export interface AgentHostWorkspaceSubject {
  host: AgentHost;
  /** The Host behind `host` (itself, or the one a stand-in HTTPS Host serves): levers and disk. */
  embedded: EmbeddedAgentHost;
  db: Queryable;
  /** Makes the Host answer for this lease (the stand-in HTTPS Host serves one lease at a time). */
  serve(binding: AgentHostWorkspaceBinding): AgentHostWorkspaceBinding;
  /** The binding as it reaches a Host that cannot be reached. */
  unreachable(binding: AgentHostWorkspaceBinding): AgentHostWorkspaceBinding;
  close(): Promise<void>;
}

const signal = () => AbortSignal.timeout(10_000);

/** A started lease row (and its Environment) as the embedded Host reads it; answers the binding. */
export async function startedLease(db: Queryable): Promise<AgentHostWorkspaceBinding> {
  const suffix = randomBytes(6).toString('hex');
  const environmentId = `env_${suffix}`;
  const operationId = `op_${suffix}`;
  const volumeId = `vol_${suffix}`;
  const podUid = `pod-${suffix}`;
  await db.query(
    `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
       run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by)
     VALUES ($1, 'acme', 'checkout', $1, 'k', 'h', 1, '{}', 1, 'Active', 1, 'test')`,
    [environmentId],
  );
  await insertLease(db, {
    environmentId,
    resourceGeneration: 1,
    operationId,
    lifecycleGeneration: 1,
    providerFence: 1,
    currentFencingGeneration: 1,
    state: 'Active',
    idempotencyKey: `lease-${suffix}`,
    runSelection: {},
    providerIdentity: {},
    providerOptions: {},
    recoveryRequest: {},
    requestedBy: 'alice',
    expiresAt: null,
    workspace: {
      volumeId,
      resourceGeneration: 1,
      dataGeneration: 3,
      mountPath: '/workspace',
      readOnly: false,
    },
    networkPolicyGeneration: 7,
    resource: { resourceId: `sbx-${suffix}`, operationId, phase: 'started', placement: { podUid } },
    releaseReceipt: null,
    failure: null,
    revision: 1,
  });
  return {
    environmentId,
    operationId,
    resourceGeneration: 1,
    providerFence: 1,
    resourceId: `sbx-${suffix}`,
    endpoint: null,
    podUid,
    workspaceVolumeId: volumeId,
    dataGeneration: 3,
    networkPolicyGeneration: 7,
  };
}

/** The tree hash as docs/architecture.md defines it, computed here without the product's code. */
export function independentTreeHash(root: string): {
  treeHash: string;
  fileCount: number;
  byteCount: number;
} {
  const lines: { key: Buffer; line: string }[] = [];
  let byteCount = 0;
  const visit = (relative: string) => {
    for (const name of readdirSync(join(root, relative))) {
      const path = relative === '' ? name : `${relative}/${name}`;
      const stats = lstatSync(join(root, path));
      if (stats.isDirectory()) {
        visit(path);
      } else {
        const content = readFileSync(join(root, path));
        const mode = stats.mode & 0o100 ? '100755' : '100644';
        const sha = createHash('sha256').update(content).digest('hex');
        lines.push({ key: Buffer.from(path), line: `${mode} ${content.length} ${sha} ${path}\n` });
        byteCount += content.length;
      }
    }
  };
  visit('');
  lines.sort((a, b) => Buffer.compare(a.key, b.key));
  const text = 'sandlot-workspace-tree-v1\n' + lines.map((l) => l.line).join('');
  return {
    treeHash: createHash('sha256').update(text, 'utf8').digest('hex'),
    fileCount: lines.length,
    byteCount,
  };
}

async function flushCount(db: Queryable, leaseOperationId: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM embedded_agenthost_flushes WHERE lease_operation_id = $1`,
    [leaseOperationId],
  );
  return result.rows[0]?.n ?? 0;
}

export function defineAgentHostWorkspaceContract(
  name: string,
  setup: () => Promise<AgentHostWorkspaceSubject>,
): void {
  describe(`AgentHost Workspace contract: ${name}`, () => {
    let subject: AgentHostWorkspaceSubject | undefined;
    const s = (): AgentHostWorkspaceSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    }, 120_000);
    afterAll(async () => {
      await subject?.close();
    });

    /** A served lease whose Workspace holds a few files, one executable and one nested. */
    async function workspace(): Promise<{ binding: AgentHostWorkspaceBinding; dir: string }> {
      const binding = s().serve(await startedLease(s().db));
      const dir = await s().embedded.workspaceDirectory(binding.workspaceVolumeId);
      mkdirSync(join(dir, 'src/nested'), { recursive: true });
      writeFileSync(join(dir, 'README.md'), '# checkout\n');
      writeFileSync(join(dir, 'src/nested/é.txt'), randomBytes(3000));
      writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho ok\n');
      chmodSync(join(dir, 'run.sh'), 0o755);
      mkdirSync(join(dir, 'empty'));
      return { binding, dir };
    }
    const request = (over: Partial<AgentHostFlushRequest> = {}): AgentHostFlushRequest => ({
      flushOperationId: `flush_${randomBytes(6).toString('hex')}`,
      transitionRevision: 4,
      ...over,
    });

    it('1. flush on the held binding answers a receipt whose tree hash is the tree on disk', async () => {
      const { binding, dir } = await workspace();
      const asked = request();
      const receipt = await s().host.flush(binding, asked, signal());
      const independent = independentTreeHash(dir);
      expect(receipt.flush).toMatchObject({
        flushOperationId: asked.flushOperationId,
        transitionRevision: 4,
        workspaceVolumeId: binding.workspaceVolumeId,
        dataGeneration: 3,
        nextDataGeneration: 4,
        ...independent,
      });
      // Three files written here and the native cache the flush wrote and synced.
      expect(independent.fileCount).toBe(4);
      const cache = readFileSync(join(dir, '.agenthost/native-cache.json'));
      expect(receipt.cache).toMatchObject({
        durable: true,
        cacheBytes: cache.length,
        cacheSha256: createHash('sha256').update(cache).digest('hex'),
      });
      expect(receipt.nativeTurns).toMatchObject({
        flushOperationId: asked.flushOperationId,
        acceptingTurns: false,
      });
      // The session's journal boundary the flush closed on: the first checkpoint of this Workspace.
      expect(receipt.journal).toMatchObject({
        flushOperationId: asked.flushOperationId,
        checkpointId: expect.stringMatching(/^ckpt_[0-9a-f]{32}$/) as unknown,
        upperPosition: 1,
        journalSha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
      });
      expect(receipt.binding.podUid).toBe(binding.podUid);
    });

    it('2. a replay of the same flush operation answers the saved receipt without flushing again', async () => {
      const { binding, dir } = await workspace();
      const asked = request();
      const first = await s().host.flush(binding, asked, signal());
      writeFileSync(join(dir, 'later.txt'), 'written after the flush');
      const again = await s().host.flush(binding, asked, signal());
      expect(again).toEqual(first);
      expect(await flushCount(s().db, binding.operationId)).toBe(1);
    });

    it('3. the same flush operation with another transition revision is a conflict', async () => {
      const { binding } = await workspace();
      const asked = request();
      await s().host.flush(binding, asked, signal());
      const error = await rejection(s().host.flush(binding, { ...asked, transitionRevision: 5 }, signal()));
      expect(error).toBeInstanceOf(AgentHostFlushRefusedError);
      expect(error).toMatchObject({ code: 'agenthost-flush-refused', reason: 'operation-conflict' });
    });

    it.each<[string, Partial<AgentHostWorkspaceBinding>]>([
      ['another data generation', { dataGeneration: 2 }],
      ['another Pod', { podUid: 'pod-other' }],
      ['another network generation', { networkPolicyGeneration: 8 }],
      ['another provider fence', { providerFence: 2 }],
      ['another Workspace volume', { workspaceVolumeId: 'vol_other' }],
    ])('4. a flush naming %s is refused and records nothing', async (_case, over) => {
      const { binding } = await workspace();
      const error = await rejection(s().host.flush({ ...binding, ...over }, request(), signal()));
      expect(error).toMatchObject({ code: 'agenthost-flush-refused', reason: 'binding-mismatch' });
      expect(await flushCount(s().db, binding.operationId)).toBe(0);
    });

    it('5. after a flush the Host holds the next data generation, and a new flush must name it', async () => {
      const { binding } = await workspace();
      const first = await s().host.flush(binding, request(), signal());
      const stale = await rejection(s().host.flush(binding, request(), signal()));
      expect(stale).toMatchObject({ reason: 'binding-mismatch' });
      const next = await s().host.flush(
        { ...binding, dataGeneration: 4 },
        request({ transitionRevision: 5 }),
        signal(),
      );
      expect(next.flush.nextDataGeneration).toBe(5);
      // The journal goes on from the first flush's boundary: one position further, another digest.
      expect(next.journal.upperPosition).toBe(2);
      expect(next.journal.journalSha256).not.toBe(first.journal.journalSha256);
      expect(next.journal.checkpointId).not.toBe(first.journal.checkpointId);
    });

    const resume = { resumeOperationId: 'op-resume-1' };

    it('6. the Workspace resume is read-only: two reads agree with the disk and no flush is recorded', async () => {
      const { binding, dir } = await workspace();
      const first = await s().host.workspaceResume(binding, resume, signal());
      const second = await s().host.workspaceResume(binding, resume, signal());
      expect(first.resumeOperationId).toBe(resume.resumeOperationId);
      expect(first.binding.workspaceVolumeId).toBe(binding.workspaceVolumeId);
      expect(first.contentProof).toMatchObject(independentTreeHash(dir));
      expect(second.contentProof.treeHash).toBe(first.contentProof.treeHash);
      expect(first.contentProof.fileCount).toBe(3);
      expect(await flushCount(s().db, binding.operationId)).toBe(0);
    });

    it('7. after a flush the Workspace resume proves the receipt hash at the next data generation', async () => {
      const { binding } = await workspace();
      const receipt = await s().host.flush(binding, request(), signal());
      const after = await s().host.workspaceResume({ ...binding, dataGeneration: 4 }, resume, signal());
      expect(after.contentProof.treeHash).toBe(receipt.flush.treeHash);
      const stale = await rejection(s().host.workspaceResume(binding, resume, signal()));
      expect(stale).toBeInstanceOf(AgentHostWorkspaceResumeRefusedError);
      expect(stale).toMatchObject({ code: 'agenthost-workspace-resume-refused', reason: 'binding-mismatch' });
    });

    it('8. a symbolic link in the Workspace refuses both the flush and the Workspace resume', async () => {
      const { binding, dir } = await workspace();
      symlinkSync('/etc/hostname', join(dir, 'src/link'));
      expect(await rejection(s().host.workspaceResume(binding, resume, signal()))).toMatchObject({
        reason: 'workspace-refused',
      });
      expect(await rejection(s().host.flush(binding, request(), signal()))).toMatchObject({
        reason: 'workspace-refused',
      });
      expect(await flushCount(s().db, binding.operationId)).toBe(0);
    });

    it.each<[string, (receipt: Record<string, unknown>) => unknown, string]>([
      [
        'a wrong next data generation',
        (r) => ({ ...r, flush: { ...(r['flush'] as object), nextDataGeneration: 5 } }),
        'receipt-mismatch',
      ],
      [
        'another flush operation',
        (r) => ({ ...r, flush: { ...(r['flush'] as object), flushOperationId: 'flush_other' } }),
        'receipt-mismatch',
      ],
      [
        'a native-turn receipt for another operation',
        (r) => ({ ...r, nativeTurns: { ...(r['nativeTurns'] as object), flushOperationId: 'flush_other' } }),
        'receipt-mismatch',
      ],
      [
        'another binding',
        (r) => ({ ...r, binding: { ...(r['binding'] as object), networkPolicyGeneration: 99 } }),
        'receipt-mismatch',
      ],
      ['no cache acknowledgment', ({ cache: _cache, ...rest }) => rest, 'receipt-malformed'],
      ['no journal boundary', ({ journal: _journal, ...rest }) => rest, 'receipt-malformed'],
      [
        'a journal boundary of another flush',
        (r) => ({ ...r, journal: { ...(r['journal'] as object), flushOperationId: 'flush_other' } }),
        'receipt-mismatch',
      ],
      [
        'a journal boundary at no position',
        (r) => ({ ...r, journal: { ...(r['journal'] as object), upperPosition: 0 } }),
        'receipt-malformed',
      ],
      [
        'a cache that is not durable',
        (r) => ({ ...r, cache: { ...(r['cache'] as object), durable: false } }),
        'receipt-malformed',
      ],
      ['an unknown member', (r) => ({ ...r, verified: true }), 'receipt-malformed'],
      ['no receipt at all', () => null, 'receipt-malformed'],
    ])('9. a Host answering %s is refused', async (_case, change, reason) => {
      const { binding } = await workspace();
      s().embedded.tamperNextAnswer(change);
      const error = await rejection(s().host.flush(binding, request(), signal()));
      expect(error).toBeInstanceOf(AgentHostFlushRefusedError);
      expect(error).toMatchObject({ reason });
    });

    it('10. a Host that could not flush is refused and records nothing', async () => {
      const { binding } = await workspace();
      s().embedded.failNextFlush();
      expect(await rejection(s().host.flush(binding, request(), signal()))).toMatchObject({
        reason: 'flush-failed',
      });
      expect(await flushCount(s().db, binding.operationId)).toBe(0);
    });

    it('11. an unreachable Host is unavailable, not a verdict', async () => {
      const { binding } = await workspace();
      const error = await rejection(s().host.flush(s().unreachable(binding), request(), signal()));
      expect(error).toBeInstanceOf(AgentHostUnavailableError);
      expect(error).toMatchObject({ code: 'agenthost-unavailable' });
      const read = await rejection(s().host.workspaceResume(s().unreachable(binding), resume, signal()));
      expect(read).toBeInstanceOf(AgentHostUnavailableError);
    });

    it('12. a Host that stalls past the caller deadline is unavailable', async () => {
      const { binding } = await workspace();
      s().embedded.stallNextCall();
      const started = Date.now();
      const error = await rejection(s().host.flush(binding, request(), AbortSignal.timeout(300)));
      expect(error).toBeInstanceOf(AgentHostUnavailableError);
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it.each<[string, (answer: Record<string, unknown>) => unknown, string]>([
      [
        'another binding',
        (a) => ({ ...a, binding: { ...(a['binding'] as object), podUid: 'pod-x' } }),
        'receipt-mismatch',
      ],
      ['another resume operation', (a) => ({ ...a, resumeOperationId: 'op-resume-2' }), 'receipt-mismatch'],
      ['no content proof', ({ contentProof: _proof, ...rest }) => rest, 'receipt-malformed'],
      [
        'a tree hash that is not a digest',
        (a) => ({ ...a, contentProof: { ...(a['contentProof'] as object), treeHash: 'abc' } }),
        'receipt-malformed',
      ],
      [
        'a bare tree hash answer',
        (a) => ({ binding: a['binding'], treeHash: 'a'.repeat(64) }),
        'receipt-malformed',
      ],
    ])('13. a Workspace resume answer with %s is refused', async (_case, change, reason) => {
      const { binding } = await workspace();
      s().embedded.tamperNextAnswer(change);
      expect(await rejection(s().host.workspaceResume(binding, resume, signal()))).toMatchObject({
        code: 'agenthost-workspace-resume-refused',
        reason,
      });
    });
  });
}
