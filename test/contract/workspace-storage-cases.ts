// The WorkspaceStorage contract: one suite, run against every implementation (the embedded table,
// and PVC + PV readback on the fake Kubernetes API). Each case changes what storage holds the way
// that storage would change, reads it back through the port and judges it with the one pure check
// admission uses (actors/workspace/storage.ts), so both implementations mean the same by each fact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  LeaseProviderRecord,
  StorageSelection,
  WorkspaceStorage,
  WorkspaceVolumeRef,
} from '../../actors/ports.ts';
import { bindingOf, checkStorageEvidence, type StorageCheckCode } from '../../actors/workspace/storage.ts';
import type { StorageBinding } from '../../store/workspace-bindings.ts';

export interface WorkspaceStorageSubject {
  storage: WorkspaceStorage;
  /** What the lease the volumes are admitted for records of its provider. */
  lease: LeaseProviderRecord;
  /** A new volume and its storage, as the Workspace storage lifecycle leaves them: Bound, annotated. */
  newVolume(): Promise<WorkspaceVolumeRef>;
  /** A volume whose storage holds nothing (no PVC). */
  volumeWithoutStorage(): Promise<WorkspaceVolumeRef>;
  /** Deletes the PVC and creates it again under the same name: a new UID, the PV still names the old. */
  replacePvc(volume: WorkspaceVolumeRef): Promise<void>;
  /** Rewrites the PVC's owner-generation annotations (strings, as Kubernetes annotations are). */
  annotate(
    volume: WorkspaceVolumeRef,
    values: { environmentId?: string; resourceGeneration?: string; dataGeneration?: string },
  ): Promise<void>;
  /** Deletes the bound PV and creates it again under the same name, claiming the same PVC: a new UID. */
  replacePv(volume: WorkspaceVolumeRef): Promise<void>;
  /** Binds the PVC to another PV (another name and UID) that claims it, in place of its own. */
  rebindPv(volume: WorkspaceVolumeRef): Promise<void>;
  /** Changes the claim's specification under the same PVC (a resize: more storage requested). */
  respec(volume: WorkspaceVolumeRef): Promise<void>;
  /** The bound PV now mounts with `mountOptions`. */
  remount(volume: WorkspaceVolumeRef, mountOptions: string[]): Promise<void>;
  /** Points the bound PV's claimRef at another claim. */
  claimPvBy(volume: WorkspaceVolumeRef, claim: { name?: string; uid?: string }): Promise<void>;
  /** The PVC goes back to Pending with no volumeName. */
  unbind(volume: WorkspaceVolumeRef): Promise<void>;
  /** The PVC now names another storage selection. */
  select(volume: WorkspaceVolumeRef, selection: StorageSelection): Promise<void>;
  /** The same storage with its backend down: its next read fails. */
  unavailable(): Promise<WorkspaceStorage>;
  close(): Promise<void>;
}

const signal = () => AbortSignal.timeout(10_000);

export function defineWorkspaceStorageContract(
  name: string,
  setup: () => Promise<WorkspaceStorageSubject>,
  options: { skip?: boolean } = {},
): void {
  describe.skipIf(options.skip === true)(`workspace storage contract: ${name}`, () => {
    let subject: WorkspaceStorageSubject | undefined;
    const s = (): WorkspaceStorageSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    });
    afterAll(async () => {
      await subject?.close();
    });

    /** The binding a first verified admission would pin, from the storage as it stands. */
    async function pinned(volume: WorkspaceVolumeRef): Promise<StorageBinding> {
      const binding = bindingOf(await s().storage.inspect(volume, s().lease, signal()));
      if (binding === null) throw new Error('nothing to pin');
      return binding;
    }

    async function codes(
      volume: WorkspaceVolumeRef,
      binding: StorageBinding | null = null,
    ): Promise<StorageCheckCode[]> {
      const evidence = await s().storage.inspect(volume, s().lease, signal());
      const expected = { volume, selection: s().storage.selection, binding };
      return checkStorageEvidence(expected, evidence).map((f) => f.code);
    }

    it('storage as the lifecycle left it passes, before and after its binding is pinned', async () => {
      const volume = await s().newVolume();
      expect(await codes(volume)).toEqual([]);
      const binding = await pinned(volume);
      expect(binding.selection).toEqual(s().storage.selection);
      expect(await codes(volume, binding)).toEqual([]);
      const evidence = await s().storage.inspect(volume, s().lease, signal());
      // Read where the lease's objects live (storage in no cluster says none).
      if (evidence.cluster !== null) expect(evidence.cluster.live).toBe(evidence.cluster.recorded);
      expect(evidence.pvc).toMatchObject({
        environmentId: volume.environmentId,
        resourceGeneration: String(volume.resourceGeneration),
        dataGeneration: String(volume.dataGeneration),
        phase: 'Bound',
        deleting: false,
      });
      expect(evidence.pv?.claimRef).toEqual({
        namespace: evidence.pvc?.namespace,
        name: evidence.pvc?.name,
        uid: evidence.pvc?.uid,
      });
    });

    it('a PVC replaced under the same name (new UID) is refused once a binding is pinned', async () => {
      const volume = await s().newVolume();
      const binding = await pinned(volume);
      await s().replacePvc(volume);
      const found = await codes(volume, binding);
      expect(found[0]).toBe('workspace-pvc-replaced');
      // The PV still names the claim it was bound to, not the new one.
      expect(found).toContain('workspace-pv-claim-mismatch');
    });

    it('a PV replaced under the same name, or another PV bound instead, is refused once pinned', async () => {
      for (const change of ['replacePv', 'rebindPv'] as const) {
        const volume = await s().newVolume();
        const binding = await pinned(volume);
        expect(binding.pv, change).toMatchObject({ claimRef: { uid: binding.pvcUid } });
        await s()[change](volume);
        // Still claiming the same PVC, so it passes on its own; only the pin tells it from the first.
        expect(await codes(volume), change).toEqual([]);
        // Another PV's name in the claim is another claim specification too.
        expect(await codes(volume, binding), change).toEqual(
          change === 'rebindPv'
            ? ['workspace-claim-spec-changed', 'workspace-pv-replaced']
            : ['workspace-pv-replaced'],
        );
        // A binding pinned before PVs were (no PV recorded) does not refuse it.
        expect(
          await codes(volume, { ...binding, pv: null, claimSpecSha256: null, mountOptions: null }),
          change,
        ).toEqual([]);
      }
    });

    it('a claim specification or mount options other than pinned are refused', async () => {
      const respecced = await s().newVolume();
      const binding = await pinned(respecced);
      expect(binding.claimSpecSha256).toMatch(/^[0-9a-f]{64}$/);
      await s().respec(respecced);
      expect(await codes(respecced)).toEqual([]);
      expect(await codes(respecced, binding)).toEqual(['workspace-claim-spec-changed']);

      const remounted = await s().newVolume();
      const approved = await pinned(remounted);
      await s().remount(remounted, [...(approved.mountOptions ?? []), 'nobrl']);
      expect(await codes(remounted, approved)).toEqual(['workspace-mount-options-changed']);
      await s().remount(remounted, approved.mountOptions ?? []);
      expect(await codes(remounted, approved)).toEqual([]);
    });

    it('a PV claimed by the replacement of the pinned PVC is refused by the pinned claimRef too', async () => {
      const volume = await s().newVolume();
      const binding = await pinned(volume);
      await s().replacePvc(volume);
      const replaced = await s().storage.inspect(volume, s().lease, signal());
      await s().claimPvBy(volume, { uid: replaced.pvc?.uid ?? '' });
      expect(await codes(volume, binding)).toEqual(['workspace-pvc-replaced', 'workspace-pv-claim-mismatch']);
    });

    it('annotations at another generation or for another Environment are refused', async () => {
      for (const values of [
        { dataGeneration: '2' },
        { resourceGeneration: '7' },
        { environmentId: 'env_someone_else' },
      ]) {
        const volume = await s().newVolume();
        await s().annotate(volume, values);
        expect(await codes(volume), JSON.stringify(values)).toEqual(['workspace-storage-mismatch']);
      }
      // And matching storage refuses a request for another generation than it holds.
      const volume = await s().newVolume();
      expect(await codes({ ...volume, dataGeneration: volume.dataGeneration + 1 })).toEqual([
        'workspace-storage-mismatch',
      ]);
    });

    it('a PV whose claimRef names another claim or another UID is refused', async () => {
      for (const claim of [{ uid: 'b1f5e0c2-0000-4000-8000-000000000000' }, { name: 'vol-other' }]) {
        const volume = await s().newVolume();
        await s().claimPvBy(volume, claim);
        expect(await codes(volume), JSON.stringify(claim)).toEqual(['workspace-pv-claim-mismatch']);
      }
    });

    it('an unbound PVC is refused, and so is no PVC at all', async () => {
      const volume = await s().newVolume();
      await s().unbind(volume);
      expect(await codes(volume)).toEqual(['workspace-pvc-unbound']);
      const missing = await s().volumeWithoutStorage();
      const evidence = await s().storage.inspect(missing, s().lease, signal());
      expect(evidence).toMatchObject({ selection: null, pvc: null, pv: null });
      expect(await codes(missing)).toContain('workspace-pvc-missing');
    });

    it('a PVC made under another storage selection is refused', async () => {
      const volume = await s().newVolume();
      const binding = await pinned(volume);
      await s().select(volume, { ...s().storage.selection, optionsRevision: 'other' });
      expect(await codes(volume)).toEqual(['workspace-selection-changed']);
      expect(await codes(volume, binding)).toEqual(['workspace-selection-changed']);
    });

    it('an outage throws: it is never evidence either way', async () => {
      const volume = await s().newVolume();
      const down = await s().unavailable();
      await expect(down.inspect(volume, s().lease, signal())).rejects.toThrow();
      // A cancelled read throws too.
      const cancelled = new AbortController();
      cancelled.abort(new Error('caller gave up'));
      await expect(s().storage.inspect(volume, s().lease, cancelled.signal)).rejects.toThrow();
    });
  });
}
