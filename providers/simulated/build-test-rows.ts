// How the simulated BuildTest runner reads its Pod rows: the binding every call must match, the
// records it keeps in the JSON columns, and the observations a row answers. A row is the runner's
// own record, written only by it, so its JSON is read back as the shape the runner wrote.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { canonicalJson } from '../../lib/canonical-json.ts';
import type { SimulatedBuildTestPodRow } from '../../store/simulated-build-test-pods.ts';
import type {
  AcceptedCommandSpec,
  BuildTestBinding,
  BuildTestPlacement,
  CollectorFailure,
  CollectorObservation,
  CollectorReceipt,
  CommandLog,
  CommandObservation,
  InterruptReason,
  PodRef,
  PodRole,
  PreparationReceipt,
} from '../build-test.ts';
import { definitive } from '../errors.ts';
import type { PlanSnapshot } from './build-test-plan.ts';

/** What every call on an operation's Pods must name exactly: the binding and the lease. */
export interface StoredBinding {
  binding: BuildTestBinding;
  resourceId: string;
  ownerHash: string;
}

/** The command Pod's `run` record: enough to finish the run after a restart. */
export interface CommandRun {
  version: 1 | 2;
  command: Pick<AcceptedCommandSpec, 'executable' | 'args' | 'workingDirectory' | 'timeoutSeconds'>;
  maxLogBytes: number;
  plan: PlanSnapshot;
}

/** The collector Pod's `run` record: what it collects, for a collection resumed after a restart. */
export interface CollectorRun {
  version: 1 | 2;
  outputs: string[];
  source: { seedSha256: string; seedLength: number; baseSha: string } | null;
  commandPodUid: string;
}

/** Copies exactly the binding's fields, so stray properties of a caller's object are never stored. */
export function storedBinding(binding: BuildTestBinding, placement: BuildTestPlacement): StoredBinding {
  const c = binding.checkpoint;
  return {
    binding: {
      operationId: binding.operationId,
      checkpoint: {
        tenantId: c.tenantId,
        projectId: c.projectId,
        runId: c.runId,
        stepId: c.stepId,
        checkpointId: c.checkpointId,
      },
      requestFingerprint: binding.requestFingerprint,
      acceptedCommandHash: binding.acceptedCommandHash,
    },
    resourceId: placement.lease.resourceId,
    ownerHash: placement.lease.owner.ownerHash,
  };
}

/** A row answers only a call with its exact binding and lease; anything else is refused. */
export function assertBinding(row: SimulatedBuildTestPodRow, expected: StoredBinding): void {
  if (canonicalJson(row.binding) !== canonicalJson(expected)) {
    throw definitive(
      'binding-mismatch',
      `Simulated BuildTest ${row.role} Pod of operation ${row.operationId} was started for another ` +
        'request, command or lease',
    );
  }
}

const operationKey = (operationId: string): string =>
  createHash('sha256').update(operationId).digest('hex').slice(0, 32);

/** Deterministic per operation and role, like a Pod name derived from the operation. */
export const podName = (operationId: string, role: PodRole): string =>
  `bt-${role === 'command' ? 'cmd' : 'col'}-${operationKey(operationId).slice(0, 20)}`;

/** The operation's directory under the runner's state directory: `repo/` and an empty `home/`. */
export const workDirOf = (stateDir: string, operationId: string): string =>
  join(stateDir, `op-${operationKey(operationId)}`);
export const repoOf = (workDir: string): string => join(workDir, 'repo');
export const homeOf = (workDir: string): string => join(workDir, 'home');

export const podRef = (row: SimulatedBuildTestPodRow): PodRef => ({
  role: row.role,
  name: row.podName,
  uid: row.podUid,
});

export function commandObservation(row: SimulatedBuildTestPodRow | null): CommandObservation {
  // A deleted Pod is gone: an exact lookup finds nothing.
  if (row === null || row.deletedAtMs !== null) return { state: 'absent' };
  const pod = podRef(row);
  const preparation = row.preparation as PreparationReceipt | null;
  switch (row.state) {
    case 'preparing':
    case 'running':
      return { state: 'running', pod, preparation };
    case 'exited':
      return { state: 'exited', pod, preparation, exitCode: row.exitCode ?? 0, log: row.log as CommandLog };
    case 'interrupted':
      return { state: 'interrupted', pod, reason: row.reason as InterruptReason, message: row.message ?? '' };
    default:
      return { state: 'failed', pod, reason: 'preparation-failed', message: row.message ?? '' };
  }
}

export function collectorObservation(row: SimulatedBuildTestPodRow | null): CollectorObservation {
  if (row === null || row.deletedAtMs !== null) return { state: 'absent' };
  const pod = podRef(row);
  switch (row.state) {
    case 'sealed':
      return { state: 'sealed', pod, receipt: row.receipt as CollectorReceipt };
    case 'failed':
      return { state: 'failed', pod, reason: row.reason as CollectorFailure, message: row.message ?? '' };
    case 'interrupted':
      return { state: 'interrupted', pod, reason: row.reason as InterruptReason, message: row.message ?? '' };
    default:
      return { state: 'running', pod };
  }
}
