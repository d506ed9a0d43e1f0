// The embedded Core's side of a BuildTest scenario: a version 2 seed registered for the project and
// the checkpoint's accepted command bound to it (`npm run build` with the given outputs).
import { registerAcceptedCommand, registerWorkspaceSeed } from '../../actors/build-test/core-embedded.ts';
import type { AcceptedBuildTestCommand, BuildTestCheckpointRef } from '../../actors/ports.ts';
import type { Database } from '../../store/db.ts';
import type { GitSeed } from './git-seed.ts';

export async function acceptVersion2(
  db: Database,
  checkpoint: BuildTestCheckpointRef,
  seed: GitSeed,
  outputs: string[] = [],
): Promise<AcceptedBuildTestCommand> {
  const registered = await registerWorkspaceSeed(db, {
    tenantId: checkpoint.tenantId,
    projectId: checkpoint.projectId,
    bytes: seed.bytes,
    createdBy: 'test',
  });
  const command: AcceptedBuildTestCommand = {
    checkpoint,
    operationId: `op-${checkpoint.checkpointId}`,
    selectionHash: 'b'.repeat(64),
    version: 2,
    command: { executable: '/usr/bin/npm', args: ['run', 'build'] },
    options: { workingDirectory: '.', environment: {}, timeoutSeconds: 900, outputs },
    workspaceInput: {
      workspaceId: 'ws-1',
      workspaceIncarnationId: 'inc-1',
      baseSha: seed.baseSha,
      branchName: 'main',
      seed: { sha256: registered.sha256, length: registered.length },
    },
  };
  const result = await registerAcceptedCommand(db, command, 'test');
  if (result !== 'created') throw new Error(`accepted command not registered: ${result}`);
  return command;
}
