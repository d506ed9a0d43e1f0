// One BuildTest step, run by the one attempt runner (workers/effect-processor.ts) once its attempt
// is Dispatched. Before a Pod is started, the accepted command is read from Core again and must
// still be exactly the one the operation reserved; version 2's seed is fetched here, by the worker,
// from the fixed Core owner (checked against the accepted length and digest, Core's metadata read
// again after the transfer) and handed to the provider, never stored. The step then watches its Pod
// until it is done or the call's deadline is near: a command still running is `running`, and a
// later reconcile looks again (the same Pod: a start is idempotent per operation).
//
// Every step runs under the AcceptedBuildTestProfile its lease recorded when it was reserved (read
// from the lease row the operation names), never under this worker's own: a profile file changed
// since then affects new leases only.
import { setTimeout as sleep } from 'node:timers/promises';
import { acceptedCommandHash, acceptedCommandSchema } from '../actors/build-test/accepted-command.ts';
import type { AttemptOutcome } from '../actors/attempts.ts';
import {
  CoreAnswerRefusedError,
  CoreCommandChangedError,
  CoreDeniedError,
} from '../actors/build-test/core-errors.ts';
import { BuildTestRefusedError } from '../actors/build-test/errors.ts';
import { leaseProfileOf, type BuildTestProfileRef } from '../actors/build-test/lease-profile.ts';
import type { Core, CoreActor } from '../actors/ports.ts';
import type { AttemptRequest } from '../machines/environment-effects.ts';
import type {
  AcceptedCommandSpec,
  BuildTestBinding,
  BuildTestPlacement,
  BuildTestProfileSnapshot,
  BuildTestRunner,
  CollectorReceipt,
  PodRef,
} from '../providers/build-test.ts';
import type { CallOptions, OwnerBinding } from '../providers/provider.ts';
import { readBuildTestOperationById, type BuildTestOperationRow } from '../store/build-test-operations.ts';
import type { Queryable } from '../store/db.ts';
import { MAX_DOCUMENT_BYTES } from '../formats/awscapt2/document-limits.ts';
import { readLeaseByOperation } from '../store/leases.ts';

export interface BuildTestWorkerDeps {
  runner: BuildTestRunner;
  core: Core;
  /** Whom Core is asked for when a worker acts for an operation (no caller's bearer is kept). */
  workerActor(tenantId: string): CoreActor;
  /** Pause between looks at a running Pod (default 200 ms). */
  pollMs?: number;
}

const failed = (code: string, message: string): AttemptOutcome => ({
  state: 'Failed',
  error: { code, message },
});

const stepped = (
  outcome: NonNullable<Extract<AttemptOutcome, { state: 'Succeeded' }>['buildTest']>['outcome'],
  evidence: Record<string, unknown>,
): AttemptOutcome => ({ state: 'Succeeded', buildTest: { outcome, evidence } });

function specOf(row: BuildTestOperationRow): AcceptedCommandSpec {
  const command = acceptedCommandSchema.parse(row.acceptedCommand);
  return {
    version: command.version,
    executable: command.command.executable,
    args: command.command.args,
    workingDirectory: command.options.workingDirectory,
    environment: command.options.environment,
    timeoutSeconds: command.options.timeoutSeconds,
    outputs: command.options.outputs,
    source:
      command.version === 2
        ? {
            seedSha256: command.workspaceInput.seed.sha256,
            seedLength: command.workspaceInput.seed.length,
            baseSha: command.workspaceInput.baseSha,
          }
        : null,
  };
}

function bindingOf(row: BuildTestOperationRow): BuildTestBinding {
  return {
    operationId: row.operationId,
    checkpoint: row.checkpoint as BuildTestBinding['checkpoint'],
    requestFingerprint: row.requestFingerprint,
    acceptedCommandHash: row.acceptedCommandHash,
  };
}

/**
 * Runs the step the attempt names. A refusal (Core's command changed, a seed that is not the
 * accepted one, a denied actor) fails the step; Core unreachable, like a provider error, is for the
 * runner to classify (uncertain: the operation waits for a reconcile).
 */
export async function runBuildTestStep(
  deps: BuildTestWorkerDeps | undefined,
  db: Queryable,
  request: AttemptRequest,
  owner: OwnerBinding,
  options: CallOptions,
): Promise<AttemptOutcome> {
  try {
    return await runStep(deps, db, request, owner, options);
  } catch (error) {
    if (error instanceof CoreCommandChangedError) return failed('build-test-command-changed', error.message);
    if (error instanceof CoreDeniedError || error instanceof CoreAnswerRefusedError)
      return failed(error.code, error.message);
    // A lease whose recorded profile is not a profile's shape: no Pod may run under it.
    if (error instanceof BuildTestRefusedError) return failed(error.code, error.message);
    throw error;
  }
}

async function runStep(
  deps: BuildTestWorkerDeps | undefined,
  db: Queryable,
  request: AttemptRequest,
  owner: OwnerBinding,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const step = request.buildTest;
  if (deps === undefined) return failed('build-test-unavailable', 'this worker has no BuildTest profile');
  if (step === undefined || request.resourceId === null)
    return failed('invalid-attempt', 'the attempt names no BuildTest operation or lease resource');
  const row = await readBuildTestOperationById(db, step.operationId);
  if (row === null) return failed('operation-missing', `no BuildTest operation ${step.operationId}`);
  const binding = bindingOf(row);
  // The lease's owner binding is the lease's, not the BuildTest operation's.
  const placement: BuildTestPlacement = {
    lease: {
      owner: { ...owner, operationId: step.leaseOperationId },
      resourceId: request.resourceId,
      options: request.providerOptions,
    },
    workspace: request.workspace,
    networkPolicyGeneration: request.networkPolicyGeneration,
  };
  if (step.step === 'cleanup') return cleanup(deps, row, binding, placement, options);
  const profile = await leaseProfile(db, row);
  if ('state' in profile) return profile;
  const command = await currentCommand(deps, row, options);
  if ('state' in command) return command;
  if (step.step === 'command') return runCommand(deps, row, binding, placement, profile, command, options);
  return collect(deps, row, binding, placement, profile, specOf(row), options);
}

/**
 * The profile the operation's lease recorded. The operation was reserved under it, so its hash is
 * the one the operation recorded; anything else (an operation reserved before leases kept their
 * profile, say) is refused rather than run under a profile it was not checked against.
 */
async function leaseProfile(
  db: Queryable,
  row: BuildTestOperationRow,
): Promise<BuildTestProfileRef | AttemptOutcome> {
  const lease = await readLeaseByOperation(db, row.leaseOperationId);
  const profile = lease === null ? null : leaseProfileOf(lease);
  if (profile === null) {
    return failed(
      'build-test-lease-without-profile',
      "the operation's lease recorded no AcceptedBuildTestProfile",
    );
  }
  if (profile.hash !== row.profileHash) {
    return failed(
      'profile-mismatch',
      "the operation was reserved under another AcceptedBuildTestProfile than its lease's",
    );
  }
  return profile;
}

/** Core's accepted command now, which must be exactly the one reserved (else the step fails). */
async function currentCommand(
  deps: BuildTestWorkerDeps,
  row: BuildTestOperationRow,
  options: CallOptions,
): Promise<ReturnType<typeof acceptedCommandSchema.parse> | AttemptOutcome> {
  const checkpoint = row.checkpoint as BuildTestBinding['checkpoint'];
  const actor = deps.workerActor(checkpoint.tenantId);
  const current = await deps.core.acceptedCommand(actor, checkpoint, options.signal);
  if (current === null || acceptedCommandHash(current) !== row.acceptedCommandHash) {
    return failed(
      'build-test-command-changed',
      'Core no longer holds the accepted command this operation reserved',
    );
  }
  return current;
}

/** The command Pod an earlier attempt recorded (its UID known), or null when none was. */
function recordedPod(stored: Record<string, unknown> | null): PodRef | null {
  return stored !== null && typeof stored['uid'] === 'string' && typeof stored['name'] === 'string'
    ? (stored as unknown as PodRef)
    : null;
}

async function runCommand(
  deps: BuildTestWorkerDeps,
  row: BuildTestOperationRow,
  binding: BuildTestBinding,
  placement: BuildTestPlacement,
  profile: BuildTestProfileSnapshot,
  command: ReturnType<typeof acceptedCommandSchema.parse>,
  options: CallOptions,
): Promise<AttemptOutcome> {
  // Once a command Pod is recorded, the step only looks at that Pod: starting it again would run the
  // command twice if it had vanished, so a recorded Pod that is gone ends the operation Interrupted.
  const recorded = recordedPod(row.commandPod);
  let pod: PodRef;
  if (recorded !== null) {
    pod = recorded;
  } else {
    const actor = deps.workerActor(binding.checkpoint.tenantId);
    const seed = command.version === 2 ? await deps.core.workspaceSeed(actor, command, options.signal) : null;
    pod = await deps.runner.startCommand(
      { binding, placement, profile, command: specOf(row), seed },
      options,
    );
  }
  for (;;) {
    const seen = await deps.runner.observeCommand(binding, placement, options);
    if (seen.state === 'absent' && recorded !== null) {
      return stepped('interrupted', {
        commandPod: { ...pod },
        error: {
          code: 'command-pod-vanished',
          message: `the command Pod ${pod.uid} recorded for this operation is gone; it is not started again`,
        },
      });
    }
    // Just created and not seen yet: uncertain, and the next look is at this recorded Pod.
    if (seen.state === 'absent') return stepped('unknown', { commandPod: { ...pod } });
    const commandPod = { ...seen.pod };
    if (seen.pod.uid !== pod.uid) return failed('pod-mismatch', 'the command Pod is not the one started');
    if (seen.state === 'exited') {
      const evidence = {
        commandPod,
        exitCode: seen.exitCode,
        commandLog: { ...seen.log },
        ...(seen.preparation === null ? {} : { preparation: { ...seen.preparation } }),
      };
      if (seen.exitCode === 0) return stepped('advanced', evidence);
      return stepped('failed', {
        ...evidence,
        error: { code: 'exit-code', message: `the command exited with ${seen.exitCode}` },
      });
    }
    if (seen.state === 'interrupted' || seen.state === 'failed') {
      const outcome = seen.state === 'interrupted' ? 'interrupted' : 'failed';
      return stepped(outcome, { commandPod, error: { code: seen.reason, message: seen.message } });
    }
    if (!(await waitOrDeadline(deps, options))) return stepped('running', { commandPod });
  }
}

async function collect(
  deps: BuildTestWorkerDeps,
  row: BuildTestOperationRow,
  binding: BuildTestBinding,
  placement: BuildTestPlacement,
  profile: BuildTestProfileSnapshot,
  command: AcceptedCommandSpec,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const commandPod = row.commandPod as PodRef | null;
  if (commandPod === null || row.exitCode !== 0)
    return failed('no-command-success', 'collection starts only after the command exited 0');
  const pod = await deps.runner.startCollector(
    {
      binding,
      placement,
      profile,
      command,
      commandPod,
      preparation: row.preparation as never,
    },
    options,
  );
  for (;;) {
    const seen = await deps.runner.observeCollector(binding, placement, options);
    if (seen.state === 'absent') return stepped('unknown', { collectorPod: { ...pod } });
    const collectorPod = { ...seen.pod };
    if (seen.state === 'sealed') {
      const problem = receiptProblem(seen.receipt, pod, binding, command);
      if (problem !== null)
        return stepped('failed', { collectorPod, error: { code: 'invalid-receipt', message: problem } });
      return stepped('sealed', {
        collectorPod,
        collectorReceipt: { ...seen.receipt },
        ...(seen.receipt.capture === null ? {} : { capture: { ...seen.receipt.capture } }),
      });
    }
    if (seen.state === 'failed' || seen.state === 'interrupted') {
      return stepped(seen.state, { collectorPod, error: { code: seen.reason, message: seen.message } });
    }
    if (!(await waitOrDeadline(deps, options))) return stepped('running', { collectorPod });
  }
}

/** The receipt must be bound to the collector Pod started here and to this operation, exactly. */
function receiptProblem(
  receipt: CollectorReceipt,
  pod: PodRef,
  binding: BuildTestBinding,
  command: AcceptedCommandSpec,
): string | null {
  if (receipt.podUid !== pod.uid) return 'the collector receipt names another Pod UID';
  if (receipt.operationId !== binding.operationId) return 'the collector receipt names another operation';
  if (receipt.checkpointId !== binding.checkpoint.checkpointId)
    return 'the collector receipt names another checkpoint';
  if (receipt.requestFingerprint !== binding.requestFingerprint)
    return 'the collector receipt names another request fingerprint';
  if (receipt.version !== command.version) return 'the collector receipt is for another command version';
  if (command.version === 2 && receipt.capture === null) return 'a version 2 receipt names no capture';
  // Whatever runner answered, a capture longer than the format allows is not one to serve or acknowledge.
  if (
    receipt.capture !== null &&
    !(receipt.capture.length >= 1 && receipt.capture.length <= MAX_DOCUMENT_BYTES)
  )
    return `the collector receipt's capture length is not 1-${MAX_DOCUMENT_BYTES} bytes`;
  const declared = new Set(command.outputs);
  if (receipt.outputs.length !== declared.size || receipt.outputs.some((o) => !declared.has(o.path)))
    return 'the collector receipt does not list exactly the declared outputs';
  return null;
}

async function cleanup(
  deps: BuildTestWorkerDeps,
  row: BuildTestOperationRow,
  binding: BuildTestBinding,
  placement: BuildTestPlacement,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const pods = [row.collectorPod, row.commandPod].filter((p): p is Record<string, unknown> => p !== null);
  await deps.runner.deletePods(binding, placement, pods as unknown as PodRef[], options);
  return stepped('cleaned', {});
}

/** False once less than two polls are left before the call's deadline. */
async function waitOrDeadline(deps: BuildTestWorkerDeps, options: CallOptions): Promise<boolean> {
  const pollMs = deps.pollMs ?? 200;
  if (options.deadline.getTime() - Date.now() < 2 * pollMs) return false;
  await sleep(pollMs, undefined, { signal: options.signal });
  return true;
}
