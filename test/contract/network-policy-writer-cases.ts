// The NetworkPolicyWriter contract: one case list, run against every implementation (the embedded
// network_policies table, and CiliumNetworkPolicies on the fake Kubernetes API). Rules are accepted
// the way the project's policy owner accepts them, written by reapply, read back from the owner's
// own storage, and judged by the verifier each implementation pairs with, so "the new generation
// holds exactly the source rules and is the one in force" means the same on both.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicyVerdict } from '../../actors/ports.ts';
import type {
  NetworkPolicyReapply,
  NetworkPolicyWriter,
} from '../../actors/sandbox/network-policy-writer.ts';

export interface Project {
  tenantId: string;
  projectId: string;
}

/** The rules of one generation: what a policy allows, without whom it selects. */
export type Rules = Record<string, unknown>;

export interface NetworkPolicyWriterSubject {
  writer: NetworkPolicyWriter;
  verify(project: Project, generation: number): Promise<NetworkPolicyVerdict>;
  /** Accepts `rules` as `generation` of the project, as its owner does (not through the writer). */
  accept(project: Project, generation: number, rules: Rules): Promise<void>;
  /** The rules `generation` holds in the owner's storage, or null when it does not exist. */
  rulesOf(project: Project, generation: number): Promise<Rules | null>;
  /** A writer over the same owner, which does not answer its next call. */
  unavailable(): Promise<NetworkPolicyWriter>;
  close(): Promise<void>;
}

const registry: Rules = { egress: [{ toFQDNs: [{ matchName: 'registry.npmjs.org' }] }] };
const mirror: Rules = { egress: [{ toFQDNs: [{ matchName: 'mirror.example.com' }] }] };
const internal: Rules = { egress: [{ toCIDR: ['10.0.0.0/8'] }] };

const newProject = (): Project => ({
  tenantId: `tenant-${randomBytes(5).toString('hex')}`,
  projectId: 'project-policies',
});
const signal = () => AbortSignal.timeout(10_000);

export function defineNetworkPolicyWriterContract(
  name: string,
  setup: () => Promise<NetworkPolicyWriterSubject>,
  options: { skip?: boolean } = {},
): void {
  describe.skipIf(options.skip === true)(`network policy writer contract: ${name}`, () => {
    let subject: NetworkPolicyWriterSubject | undefined;
    const s = (): NetworkPolicyWriterSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    });
    afterAll(async () => {
      await subject?.close();
    });

    const reapply = (project: Project, from: number, to = from + 1): Promise<NetworkPolicyReapply> =>
      s().writer.reapply(project.tenantId, project.projectId, from, to, signal());
    const refusalOf = async (project: Project, from: number, to = from + 1) => {
      const answer = await reapply(project, from, to);
      expect(answer.outcome).toBe('refused');
      return answer.outcome === 'refused' ? answer.code : undefined;
    };

    it('1. copies exactly the current generation’s rules to the next, which the verifier then verifies instead', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      const answer = await reapply(project, 1);
      expect(answer).toMatchObject({ outcome: 'applied', generation: 2 });
      expect(answer.outcome === 'applied' && answer.digest).toMatch(/^[0-9a-f]{64}$/);
      expect(await s().rulesOf(project, 2)).toEqual(registry);
      expect(await s().rulesOf(project, 1)).toEqual(registry);
      expect(await s().verify(project, 2)).toEqual({ verified: true });
      expect((await s().verify(project, 1)).verified).toBe(false);
    });

    it('2. a repeat answers the same result and writes nothing new; the digest follows the rules, not the generation', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      const first = await reapply(project, 1);
      expect(await reapply(project, 1)).toEqual(first);
      expect(await s().rulesOf(project, 2)).toEqual(registry);
      expect(await s().rulesOf(project, 3)).toBeNull();
      const next = await reapply(project, 2);
      expect(next).toMatchObject({ outcome: 'applied', generation: 3 });
      expect(next.outcome === 'applied' && first.outcome === 'applied' && next.digest).toBe(
        first.outcome === 'applied' && first.digest,
      );
      const other = newProject();
      await s().accept(other, 1, mirror);
      const elsewhere = await reapply(other, 1);
      expect(elsewhere.outcome === 'applied' && elsewhere.digest).not.toBe(
        first.outcome === 'applied' && first.digest,
      );
    });

    it('3. refuses a target generation that holds other rules, and leaves it as it was', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      await s().accept(project, 2, mirror);
      expect(await refusalOf(project, 1)).toBe('target-conflict');
      expect(await s().rulesOf(project, 2)).toEqual(mirror);
      expect(await s().verify(project, 2)).toEqual({ verified: true });
    });

    it('4. refuses a source generation that is no longer current, including after its own reapply moved on', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      await s().accept(project, 2, mirror);
      await s().accept(project, 3, internal);
      expect(await refusalOf(project, 1)).toBe('generation-not-current');
      expect(await s().rulesOf(project, 2)).toEqual(mirror);

      const own = newProject();
      await s().accept(own, 1, registry);
      expect(await reapply(own, 1)).toMatchObject({ outcome: 'applied', generation: 2 });
      expect(await reapply(own, 2)).toMatchObject({ outcome: 'applied', generation: 3 });
      expect(await refusalOf(own, 1)).toBe('generation-not-current');
      expect(await s().verify(own, 3)).toEqual({ verified: true });
    });

    it('5. refuses a source generation that does not exist, and writes nothing', async () => {
      const project = newProject();
      expect(await refusalOf(project, 1)).toBe('generation-missing');
      await s().accept(project, 1, registry);
      expect(await refusalOf(project, 4)).toBe('generation-missing');
      expect(await s().rulesOf(project, 5)).toBeNull();
      expect(await s().rulesOf(project, 2)).toBeNull();
    });

    it('6. refuses a target that is not the source generation + 1, or a source below 1', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      expect(await refusalOf(project, 1, 3)).toBe('invalid-generation');
      expect(await refusalOf(project, 1, 1)).toBe('invalid-generation');
      expect(await refusalOf(project, 0, 1)).toBe('invalid-generation');
      expect(await s().rulesOf(project, 3)).toBeNull();
      expect(await s().verify(project, 1)).toEqual({ verified: true });
    });

    it('7. an owner that does not answer throws (unavailable), never a refusal; the retry then applies', async () => {
      const project = newProject();
      await s().accept(project, 1, registry);
      const down = await s().unavailable();
      await expect(down.reapply(project.tenantId, project.projectId, 1, 2, signal())).rejects.toThrow();
      const cancelled = new AbortController();
      cancelled.abort();
      await expect(
        s().writer.reapply(project.tenantId, project.projectId, 1, 2, cancelled.signal),
      ).rejects.toThrow();
      expect(await reapply(project, 1)).toMatchObject({ outcome: 'applied', generation: 2 });
      expect(await s().rulesOf(project, 2)).toEqual(registry);
    });
  });
}
