// SandboxBuildTestOperationResult: the operation as a caller sees it, and whether the answer
// replays an operation that already existed. Seed and package bytes are never part of it; the
// capture is named by its digest and length only.
import type { BuildTestOperationRow } from '../../store/build-test-operations.ts';

export interface BuildTestOperationView {
  operationId: string;
  environmentId: string;
  checkpoint: Record<string, unknown>;
  version: number;
  acceptedCommandHash: string;
  requestFingerprint: string;
  profileHash: string;
  binding: Record<string, unknown>;
  state: BuildTestOperationRow['state'];
  step: BuildTestOperationRow['step'];
  pods: { command: Record<string, unknown> | null; collector: Record<string, unknown> | null };
  preparation: Record<string, unknown> | null;
  exitCode: number | null;
  log: Record<string, unknown> | null;
  collectorReceipt: Record<string, unknown> | null;
  capture: { sha256: string; length: number } | null;
  error: Record<string, unknown> | null;
  acknowledgment: Record<string, unknown> | null;
  acknowledgedAt: string | null;
  cleanedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface BuildTestOperationResult {
  operation: BuildTestOperationView;
  replay: boolean;
}

export function operationView(row: BuildTestOperationRow): BuildTestOperationView {
  return {
    operationId: row.operationId,
    environmentId: row.environmentId,
    checkpoint: row.checkpoint,
    version: typeof row.acceptedCommand['version'] === 'number' ? row.acceptedCommand['version'] : 1,
    acceptedCommandHash: row.acceptedCommandHash,
    requestFingerprint: row.requestFingerprint,
    profileHash: row.profileHash,
    binding: row.expectedBinding,
    state: row.state,
    step: row.step,
    pods: { command: row.commandPod, collector: row.collectorPod },
    preparation: row.preparation,
    exitCode: row.exitCode,
    log: row.commandLog,
    collectorReceipt: row.collectorReceipt,
    capture: row.capture,
    error: row.error,
    acknowledgment: row.acknowledgment,
    acknowledgedAt: row.acknowledgedAt,
    cleanedAt: row.cleanedAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
