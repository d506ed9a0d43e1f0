// The steps a simulated BuildTest Pod takes after its row exists, each under the row's lock so that
// exactly one process takes it, and each safe to take again after a crash (the lock's transaction
// rolls back; the next caller starts the step over). Preparation: a repository from the seed, and
// the command starts only once the receipt matches. Finishing a command: its plan applied, its end
// recorded. Finishing a collector: the capture sealed, or the reason it was refused.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256Of } from '../../formats/awscapt2/file-package.ts';
import { pathProblem } from '../../formats/awscapt2/repository-path.ts';
import type { Database } from '../../store/db.ts';
import {
  findBuildTestPod,
  finishBuildTestPod,
  markBuildTestPodRunning,
  sealBuildTestCapture,
} from '../../store/simulated-build-test-pods.ts';
import type { AcceptedCommandSpec, CommandPodRequest, PreparationReceipt } from '../build-test.ts';
import { definitive } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import { collect } from './build-test-collector.ts';
import { applyPlan, commandLog } from './build-test-plan.ts';
import { GitRefused, prepareRepository, type GitContext } from './build-test-repository.ts';
import { homeOf, repoOf, type CollectorRun, type CommandRun, type StoredBinding } from './build-test-rows.ts';

export interface StepContext {
  db: Database;
  /** The clock command durations are measured by. */
  now: () => number;
}

/** Version, source, seed and working directory must agree before anything is created. */
export function checkCommand(request: CommandPodRequest): void {
  const { command, seed } = request;
  const refuse = (message: string) => definitive('invalid-command', `Simulated BuildTest: ${message}`);
  if (command.version === 2 && (command.source === null || seed === null)) {
    throw refuse('a version 2 command needs its source and the seed bytes');
  }
  if (command.version === 1 && (command.source !== null || seed !== null)) {
    throw refuse('a version 1 command has no source and no seed');
  }
  if (!isWorkingDirectory(command.workingDirectory)) {
    throw refuse('the working directory must be "." or a repository path');
  }
}

const isWorkingDirectory = (dir: AcceptedCommandSpec['workingDirectory']): boolean =>
  dir === '.' || pathProblem(dir) === undefined;

/** Prepares the repository under the row lock; the command runs once the receipt matched. */
export async function prepareCommandPod(
  ctx: StepContext,
  request: CommandPodRequest,
  options: CallOptions,
): Promise<void> {
  const { binding, command, seed } = request;
  const operationId = binding.operationId;
  await ctx.db.transaction(async (tx) => {
    const row = await findBuildTestPod(tx, operationId, 'command', true);
    if (row === null || row.state !== 'preparing') return;
    const fail = (message: string) =>
      finishBuildTestPod(tx, operationId, 'command', {
        state: 'failed',
        reason: 'preparation-failed',
        message,
        finishedAtMs: Math.round(ctx.now()),
      });
    const repo = repoOf(row.workDir);
    const git: GitContext = { home: homeOf(row.workDir), options };
    let preparation: PreparationReceipt | null = null;
    if (command.source === null) {
      await rm(repo, { recursive: true, force: true });
      await mkdir(repo, { recursive: true });
    } else {
      const source = command.source;
      if (seed === null || seed.length !== source.seedLength || sha256Of(seed) !== source.seedSha256) {
        await fail('the seed is not the accepted one (its SHA-256 or length differs)');
        return;
      }
      try {
        await prepareRepository(row.workDir, repo, seed, source.baseSha, git);
      } catch (error) {
        if (!(error instanceof GitRefused)) throw error;
        await fail(`the repository could not be prepared from the seed: ${error.message}`);
        return;
      }
      preparation = {
        operationId,
        checkpointId: binding.checkpoint.checkpointId,
        sourceSha256: sha256Of(seed),
        path: repo,
        podUid: row.podUid,
      };
      // The command starts only on a receipt that names exactly this operation, source and Pod.
      if (preparation.sourceSha256 !== source.seedSha256 || preparation.podUid !== row.podUid) {
        await fail('the preparation receipt does not match the operation');
        return;
      }
    }
    const run = row.run as CommandRun;
    await mkdir(join(repo, run.command.workingDirectory), { recursive: true });
    await markBuildTestPodRunning(tx, operationId, preparation, Math.round(ctx.now()) + run.plan.durationMs);
  });
}

/** Ends a running command whose plan is due, under the row lock, exactly once. */
export async function finishCommandPod(ctx: StepContext, operationId: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const row = await findBuildTestPod(tx, operationId, 'command', true);
    if (row === null || row.state !== 'running' || ctx.now() < (row.finishDueMs ?? 0)) return;
    const run = row.run as CommandRun;
    // Idempotent: a completion cut short by a crash is applied again by the next observer.
    await applyPlan(repoOf(row.workDir), run.plan);
    const log = commandLog(run.command, run.plan, run.maxLogBytes);
    const finishedAtMs = Math.round(ctx.now());
    const { interrupt } = run.plan;
    await finishBuildTestPod(
      tx,
      operationId,
      'command',
      interrupt === null
        ? { state: 'exited', exitCode: run.plan.exitCode, log, finishedAtMs }
        : { state: 'interrupted', reason: interrupt.reason, message: interrupt.message, log, finishedAtMs },
    );
  });
}

/** Collects and seals (or fails) a running collector under its row lock, exactly once. */
export async function finishCollectorPod(
  ctx: StepContext,
  operationId: string,
  options: CallOptions,
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const row = await findBuildTestPod(tx, operationId, 'collector', true);
    if (row === null || row.state !== 'running' || row.sealedDocument !== null) return;
    const commandRow = await findBuildTestPod(tx, operationId, 'command');
    const stored = row.binding as StoredBinding;
    const collection = await collect({
      run: row.run as CollectorRun,
      binding: stored.binding,
      podUid: row.podUid,
      repo: repoOf(row.workDir),
      preparation: (commandRow?.preparation ?? null) as PreparationReceipt | null,
      git: { home: homeOf(row.workDir), options },
    });
    const finishedAtMs = Math.round(ctx.now());
    if (collection.sealed) {
      await sealBuildTestCapture(tx, operationId, {
        document:
          collection.document === null
            ? null
            : {
                bytes: collection.document.bytes,
                sha256: collection.document.sha256,
                length: collection.document.length,
              },
        receipt: collection.receipt,
        finishedAtMs,
      });
    } else {
      const { reason, message } = collection;
      await finishBuildTestPod(tx, operationId, 'collector', {
        state: 'failed',
        reason,
        message,
        finishedAtMs,
      });
    }
  });
}
