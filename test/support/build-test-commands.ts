// Accepted BuildTest commands for Core port tests: each call names a fresh checkpoint and operation,
// so cases sharing one Core never see each other's rows.
import { createHash, randomBytes } from 'node:crypto';
import type {
  AcceptedBuildTestCommand,
  BuildTestCheckpointRef,
  CoreActor,
  JournalAcknowledgment,
} from '../../actors/ports.ts';

export const actorOf = (tenantId: string, subject: string, bearer: string, ttlMs = 3_600_000): CoreActor => ({
  tenantId,
  subject,
  bearer,
  expiresAt: new Date(Date.now() + ttlMs),
});

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export function freshCheckpoint(tenantId = 'acme'): BuildTestCheckpointRef {
  const id = randomBytes(5).toString('hex');
  return {
    tenantId,
    projectId: 'checkout',
    runId: `run-${id}`,
    stepId: 'build.test_1',
    checkpointId: `cp-${id}`,
  };
}

export function version1Command(checkpoint = freshCheckpoint()): AcceptedBuildTestCommand {
  return {
    checkpoint,
    operationId: `op-${checkpoint.checkpointId}`,
    selectionHash: 'a'.repeat(64),
    version: 1,
    command: { executable: '/usr/bin/make', args: ['test', '--jobs=2'] },
    options: {
      workingDirectory: '.',
      environment: { CI: 'true' },
      timeoutSeconds: 600,
      outputs: ['reports/junit.xml'],
    },
  };
}

export function version2Command(seed: Uint8Array, checkpoint = freshCheckpoint()): AcceptedBuildTestCommand {
  return {
    checkpoint,
    operationId: `op-${checkpoint.checkpointId}`,
    selectionHash: 'b'.repeat(64),
    version: 2,
    command: { executable: '/usr/bin/npm', args: ['run', 'build'] },
    options: { workingDirectory: 'app', environment: {}, timeoutSeconds: 900, outputs: [] },
    workspaceInput: {
      workspaceId: 'ws-1',
      workspaceIncarnationId: 'inc-1',
      baseSha: 'c'.repeat(40),
      branchName: 'main',
      seed: { sha256: sha256(seed), length: seed.length },
    },
  };
}

export function acknowledgmentFor(command: AcceptedBuildTestCommand): JournalAcknowledgment {
  return {
    checkpoint: command.checkpoint,
    operationId: command.operationId,
    journalPosition: 42,
    recordSha256: 'd'.repeat(64),
    objectReference: `source-control://captures/${command.operationId}`,
    capture: {
      sha256: 'e'.repeat(64),
      length: 1234,
      requestFingerprint: 'f'.repeat(64),
      collectorPodUid: 'uid-collector',
      commandPodUid: 'uid-command',
    },
  };
}

/** The checkpoint the route-wide tests (auth matrix, fuzzing) name: run-1 of acme's checkout. */
export const routeCheckpoint: BuildTestCheckpointRef = {
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  stepId: 'build',
  checkpointId: 'cp-1',
};

/** A well-formed command request on a lease's first generations, for tests that stop before it runs. */
export function commandRequestFor(leaseOperationId: string, volumeId: string) {
  return {
    checkpoint: routeCheckpoint,
    expectedBinding: {
      leaseOperationId,
      resourceGeneration: 1,
      providerFence: 1,
      workspace: { volumeId, resourceGeneration: 1, dataGeneration: 1 },
      networkPolicyGeneration: 1,
    },
  };
}

/** A well-formed acknowledgment of `routeCheckpoint`'s operation, for the same tests. */
export const routeAcknowledgment: JournalAcknowledgment = {
  checkpoint: routeCheckpoint,
  operationId: 'op-cp-1',
  journalPosition: 1,
  recordSha256: 'c'.repeat(64),
  objectReference: 'source-control://captures/op-cp-1',
  capture: {
    sha256: 'd'.repeat(64),
    length: 1,
    requestFingerprint: 'e'.repeat(64),
    collectorPodUid: 'collector',
    commandPodUid: 'command',
  },
};
