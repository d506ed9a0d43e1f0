// Suspend resolve (docs/suspend-resume.md, docs/api.md "Suspend resolve"): Core offers its current
// suspend operation and the Host session proof; Environment answers the exact Storage resource,
// provider binding, transition revision and next data generation the Workspace flush will carry.
// Read-only while Core's operation is Reserved: nothing here writes, and the owner read runs in a
// READ ONLY transaction. The request carries no Workspace evidence (the route refuses unknown
// fields); every fact comes from its owner: Core's operation and registration from Core, asked with
// the original actor; the lease, volume and pinned storage binding from our tables, under the
// Environment's owner lock.
//
// Fresh Projects authority (WriteProjects and ReadRunSelection, as BuildTest) is asked before and
// after every await, the last time inside the owner transaction before it ends.
import type { Database } from '../../store/db.ts';
import { lockEnvironment } from '../../store/environments.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { coreActorOf } from '../build-test/requests.ts';
import type { AuthorityDeps } from '../guard.ts';
import type { RuntimeCore, RuntimeOperation } from '../ports.ts';
import { SuspendRefusedError } from './errors.ts';
import { openSuspendStep, type SuspendActor } from './open.ts';
import {
  askCoreForSuspend,
  attachedVolumeProblem,
  placementProblem,
  readSuspendOwnerFacts,
  refuseOn,
  sessionProblem,
  transitionProblem,
  type SessionProof,
} from './suspend-checks.ts';

export type { SuspendActor };

export interface SuspendDeps extends AuthorityDeps {
  db: Database;
  /** Core's suspend/resume side (absent: no Core is configured, and suspend answers 503). */
  runtimeCore?: RuntimeCore;
  /** Deadline of one Core call made for a request (default 30 s). */
  callTimeoutMs?: number;
}

/** What Core sends: its current suspend operation, as it holds it, and the Host session proof. */
export interface SuspendResolveRequest {
  operation: RuntimeOperation;
  session: SessionProof;
}

/** What the Workspace flush of this operation will carry, exactly. */
export interface SuspendResolution {
  operationId: string;
  stateRevision: number;
  /** The Workspace volume and the storage its record pinned (no options, no release descriptor). */
  storage: {
    volumeId: string;
    resourceGeneration: number;
    /** The storage provider the volume's first verified admission pinned. */
    providerId: string;
    pvc: { namespace: string; name: string; uid: string };
  };
  providerBinding: {
    providerId: string;
    resourceId: string;
    leaseOperationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
  };
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
}

export class SuspendService {
  constructor(private readonly deps: SuspendDeps) {}

  /** Resolve Core's Reserved suspend operation to the exact flush request; writes nothing. */
  async resolve(actor: SuspendActor, request: SuspendResolveRequest): Promise<SuspendResolution> {
    const offered = request.operation;
    const { ref } = offered;
    const { guard, core } = await openSuspendStep(this.deps, actor, ref);

    const { operation, registration } = await guard.after(() =>
      askCoreForSuspend(
        core,
        coreActorOf(actor),
        ref,
        { operationId: offered.operationId, states: ['reserved'] },
        AbortSignal.timeout(this.deps.callTimeoutMs ?? 30_000),
      ),
    );
    if (canonicalJson(operation) !== canonicalJson(offered)) {
      throw new SuspendRefusedError(
        'suspend-operation-changed',
        `Core holds suspend operation ${operation.operationId} at state revision ${operation.stateRevision} with other terms or state than offered (state revision ${offered.stateRevision}); ask Core again`,
      );
    }
    refuseOn('runtime-session-mismatch', sessionProblem(registration, request.session));

    return this.deps.db.transaction(async (tx) => {
      await tx.query('SET TRANSACTION READ ONLY');
      await lockEnvironment(tx, ref.environmentId);
      const { lease, volume, storage } = await readSuspendOwnerFacts(
        tx,
        ref.environmentId,
        operation.workspace.volumeId,
      );
      refuseOn('suspend-placement-mismatch', placementProblem(operation, lease));
      refuseOn('workspace-not-attached', attachedVolumeProblem(operation, lease, volume));
      // Both judges passed, so both rows exist and the lease has its resource.
      if (lease?.resource == null || volume === null)
        throw new Error('suspend facts vanished after their checks');
      refuseOn('workspace-transition-stale', transitionProblem(operation, volume));
      if (storage === null) {
        throw new SuspendRefusedError(
          'workspace-storage-unpinned',
          `Workspace volume ${volume.volumeId} has no pinned storage binding (no verified admission pinned it)`,
        );
      }
      const providerId = lease.providerIdentity['providerId'];
      if (typeof providerId !== 'string') {
        throw new SuspendRefusedError(
          'suspend-placement-mismatch',
          `lease ${lease.operationId} records no provider identity`,
        );
      }
      await guard.check(tx);
      return {
        operationId: operation.operationId,
        stateRevision: operation.stateRevision,
        storage: {
          volumeId: volume.volumeId,
          resourceGeneration: volume.resourceGeneration,
          providerId: storage.selection.providerId,
          pvc: { namespace: storage.pvcNamespace, name: storage.pvcName, uid: storage.pvcUid },
        },
        providerBinding: {
          providerId,
          resourceId: lease.resource.resourceId,
          leaseOperationId: lease.operationId,
          lifecycleGeneration: lease.lifecycleGeneration,
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
        },
        transitionRevision: volume.revision,
        dataGeneration: volume.dataGeneration,
        nextDataGeneration: volume.dataGeneration + 1,
      };
    });
  }
}
