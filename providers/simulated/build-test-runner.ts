// The simulated BuildTest runner: the embedded mode's and the tests' stand-in for the command and
// collector Pods. Pods are rows of simulated_build_test_pods (one per operation and role, inserted
// ON CONFLICT DO NOTHING and read back), so a repeated start, from any process or after a restart,
// answers the Pod it started. The command Pod prepares a real Git repository from the seed bundle
// under `stateDir`, then follows a seeded plan instead of running the accepted executable; the plan
// is snapshotted into the row, and whoever observes the run past its end finishes it under the row
// lock, once. The collector reads the prepared repository and seals the version 2 document in its
// row in one guarded UPDATE; a retry answers the sealed bytes and never captures again.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { sha256Of } from '../../formats/awscapt2/file-package.ts';
import type { Database } from '../../store/db.ts';
import { findSimulatedResource } from '../../store/simulated-resources.ts';
import {
  findBuildTestPod,
  findBuildTestPodByUid,
  insertBuildTestPod,
  listBuildTestPods,
  markBuildTestPodDeleted,
  type SimulatedBuildTestPodRow,
} from '../../store/simulated-build-test-pods.ts';
import type {
  BuildTestBinding,
  BuildTestPlacement,
  BuildTestRunner,
  CaptureRef,
  CollectorObservation,
  CollectorRequest,
  CommandObservation,
  CommandPodRequest,
  PodRef,
  PodRole,
} from '../build-test.ts';
import { chunksOfBytes, verifiedCapture } from '../../lib/capture-stream.ts';
import { callBudget, hasTimeLeft } from '../call-budget.ts';
import { definitive, ProviderError, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import {
  checkCommand,
  finishCollectorPod,
  finishCommandPod,
  prepareCommandPod,
  type StepContext,
} from './build-test-pod-steps.ts';
import { defaultPlan, snapshotPlan, type PlanFor, type SimulatedCommandPlan } from './build-test-plan.ts';
import {
  assertBinding,
  collectorObservation,
  commandObservation,
  podName,
  podRef,
  storedBinding,
  workDirOf,
  type CollectorRun,
  type CommandRun,
  type StoredBinding,
} from './build-test-rows.ts';

export type { SimulatedCommandPlan } from './build-test-plan.ts';

export interface SimulatedBuildTestRunnerOptions {
  db: Database;
  /** Where prepared repositories live; default `<tmpdir>/sandlot-simulated-build-test`. */
  stateDir?: string;
  /** The clock command durations are measured by; call deadlines use real time. */
  now?: () => number;
  /** The plan of an operation no `setPlan` named; default: exit 0, each declared output written. */
  planFor?: PlanFor;
}

const budget = callBudget('Simulated BuildTest');

export class SimulatedBuildTestRunner implements BuildTestRunner {
  /** The plan of an operation no `setPlan` named; read when its command Pod is created. */
  planFor: PlanFor;
  readonly stateDir: string;
  private readonly db: Database;
  private readonly now: () => number;
  private readonly plans = new Map<string, SimulatedCommandPlan>();
  private readonly steps: StepContext;

  constructor(options: SimulatedBuildTestRunnerOptions) {
    this.db = options.db;
    this.stateDir = options.stateDir ?? join(tmpdir(), 'sandlot-simulated-build-test');
    this.now = options.now ?? Date.now;
    this.planFor = options.planFor ?? defaultPlan;
    this.steps = { db: this.db, now: this.now };
  }

  /** Test lever: the plan the operation's command follows, if its Pod is created after this call. */
  setPlan(operationId: string, plan: SimulatedCommandPlan): void {
    this.plans.set(operationId, plan);
  }

  startCommand(request: CommandPodRequest, options: CallOptions): Promise<PodRef> {
    return this.call('startCommand', options, async () => {
      const { binding, placement } = request;
      checkCommand(request);
      await this.checkPlacement(placement, request.profile.egress);
      const expected = storedBinding(binding, placement);
      // A repeat finds the Pod and its plan snapshot; only a first start asks for a plan.
      const existing = await this.lookup(binding.operationId, 'command', expected);
      const row = existing ?? (await this.create('command', expected, this.commandRun(request)));
      if (row.deletedAtMs !== null) throw deleted('command', binding.operationId);
      if (row.state === 'preparing') await prepareCommandPod(this.steps, request, options);
      return podRef(row);
    });
  }

  observeCommand(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CommandObservation> {
    return this.call('observeCommand', options, async () => {
      const expected = storedBinding(binding, placement);
      let row = await this.lookup(binding.operationId, 'command', expected);
      if (row?.state === 'running' && row.deletedAtMs === null && this.now() >= (row.finishDueMs ?? 0)) {
        await finishCommandPod(this.steps, binding.operationId);
        row = await this.lookup(binding.operationId, 'command', expected);
      }
      return commandObservation(row);
    });
  }

  startCollector(request: CollectorRequest, options: CallOptions): Promise<PodRef> {
    return this.call('startCollector', options, async () => {
      const { binding, placement, command } = request;
      await this.checkPlacement(placement, request.profile.egress);
      const expected = storedBinding(binding, placement);
      const commandRow = await this.lookup(binding.operationId, 'command', expected);
      if (commandRow === null || commandRow.deletedAtMs !== null) {
        throw definitive(
          'command-absent',
          `Operation ${binding.operationId} has no command Pod to collect from`,
        );
      }
      if (commandRow.state !== 'exited' || commandRow.exitCode !== 0) {
        throw definitive(
          'command-not-succeeded',
          `Operation ${binding.operationId}'s command did not exit 0`,
        );
      }
      if (request.commandPod.role !== 'command' || request.commandPod.uid !== commandRow.podUid) {
        throw definitive(
          'command-pod-mismatch',
          `The command Pod named is not operation ${binding.operationId}'s`,
        );
      }
      if (canonicalJson(request.preparation) !== canonicalJson(commandRow.preparation)) {
        throw definitive('preparation-mismatch', 'The preparation receipt named is not the command Pod’s');
      }
      if ((command.version === 2) !== (command.source !== null)) {
        throw definitive('invalid-command', 'A version 2 command has a source; version 1 has none');
      }
      const run: CollectorRun = {
        version: command.version,
        outputs: [...command.outputs],
        source: command.source === null ? null : { ...command.source },
        commandPodUid: commandRow.podUid,
      };
      const row = await this.create('collector', expected, run);
      if (row.state === 'running') await finishCollectorPod(this.steps, binding.operationId, options);
      return podRef(row);
    });
  }

  observeCollector(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CollectorObservation> {
    return this.call('observeCollector', options, async () => {
      const expected = storedBinding(binding, placement);
      let row = await this.lookup(binding.operationId, 'collector', expected);
      // A collection cut short (a restart, a caller's deadline) is done again by the next look.
      if (row?.state === 'running' && row.deletedAtMs === null) {
        await finishCollectorPod(this.steps, binding.operationId, options);
        row = await this.lookup(binding.operationId, 'collector', expected);
      }
      return collectorObservation(row);
    });
  }

  readCapture(ref: CaptureRef, options: CallOptions): Promise<AsyncIterable<Uint8Array>> {
    return this.call('readCapture', options, async () => {
      const row = await findBuildTestPodByUid(this.db, ref.collectorPodUid);
      if (row === null || row.role !== 'collector') {
        throw definitive('capture-absent', `No collector Pod ${ref.collectorPodUid}`);
      }
      assertBinding(row, storedBinding(ref.binding, ref.placement));
      if (row.deletedAtMs !== null)
        throw definitive('capture-gone', `Collector Pod ${row.podUid} was deleted`);
      const bytes = row.sealedDocument;
      if (row.state !== 'sealed' || bytes === null) {
        throw definitive('capture-absent', `Collector Pod ${row.podUid} sealed no document`);
      }
      if (bytes.length !== ref.length || sha256Of(bytes) !== ref.sha256 || row.sealedSha256 !== ref.sha256) {
        throw definitive('capture-mismatch', `Collector Pod ${row.podUid} sealed another document`);
      }
      // Copied: the stored row's bytes are the simulated Pod's private state.
      return verifiedCapture(chunksOfBytes(new Uint8Array(bytes)), ref, (why) =>
        definitive('capture-mismatch', `Collector Pod ${row.podUid} answered ${why}`),
      );
    });
  }

  deletePods(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    pods: readonly PodRef[],
    options: CallOptions,
  ): Promise<void> {
    return this.call('deletePods', options, async () => {
      const expected = storedBinding(binding, placement);
      const rows: SimulatedBuildTestPodRow[] = [];
      // Every UID is checked before any is deleted: a foreign one refuses the whole call.
      for (const pod of pods) {
        const row = await findBuildTestPodByUid(this.db, pod.uid);
        if (
          row === null ||
          row.operationId !== binding.operationId ||
          row.role !== pod.role ||
          row.podName !== pod.name
        ) {
          throw definitive(
            'pod-not-ours',
            `Pod ${pod.uid} is not operation ${binding.operationId}'s ${pod.role} Pod`,
          );
        }
        assertBinding(row, expected);
        rows.push(row);
      }
      for (const row of rows) await markBuildTestPodDeleted(this.db, row.podUid, Math.round(this.now()));
      const all = await listBuildTestPods(this.db, binding.operationId);
      if (all.length > 0 && all.every((row) => row.deletedAtMs !== null)) {
        await rm(all[0]!.workDir, { recursive: true, force: true });
      }
    });
  }

  /** Budget checks around one call; a failure that is not a provider refusal is uncertain. */
  private async call<T>(what: string, options: CallOptions, body: () => Promise<T>): Promise<T> {
    budget.check(options, what);
    let result: T;
    try {
      result = await body();
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      if (options.signal.aborted) throw budget.cancelled(what, options.signal);
      if (!hasTimeLeft(options.deadline)) throw budget.timedOut(what, options.deadline);
      throw uncertain('simulated-error', `Simulated BuildTest ${what} failed`, error);
    }
    // An answer that arrives after the caller gave up is not one it can rely on.
    budget.check(options, what);
    return result;
  }

  /** The lease must be live, with the caller's owner hash and fence; the Pods run offline. */
  private async checkPlacement(placement: BuildTestPlacement, egress: string): Promise<void> {
    if (egress !== 'deny-all')
      throw definitive('egress-not-denied', 'BuildTest Pods run only with deny-all egress');
    const lease = await findSimulatedResource(this.db, placement.lease.resourceId);
    if (lease === null || lease.deleted) {
      throw definitive(
        'lease-absent',
        `Simulated resource ${placement.lease.resourceId} is absent or released`,
      );
    }
    const owner = placement.lease.owner;
    if (lease.owner.ownerHash !== owner.ownerHash || lease.owner.providerFence !== owner.providerFence) {
      throw definitive(
        'lease-mismatch',
        `Simulated resource ${placement.lease.resourceId} has another owner or fence`,
      );
    }
  }

  /** Inserts the operation's Pod of `role` unless it has one, and answers the stored one. */
  private async create(role: PodRole, expected: StoredBinding, run: CommandRun | CollectorRun) {
    const operationId = expected.binding.operationId;
    const workDir = workDirOf(this.stateDir, operationId);
    await insertBuildTestPod(this.db, {
      operationId,
      role,
      podName: podName(operationId, role),
      podUid: randomUUID(),
      binding: expected,
      workDir,
      run,
      state: role === 'command' ? 'preparing' : 'running',
      createdAtMs: Math.round(this.now()),
    });
    const row = await this.lookup(operationId, role, expected);
    if (row === null)
      throw uncertain('not-found-after-create', `Simulated ${role} Pod of ${operationId} vanished`);
    if (row.deletedAtMs !== null) throw deleted(role, operationId);
    return row;
  }

  private commandRun(request: CommandPodRequest): CommandRun {
    const { binding, command } = request;
    const plan = this.plans.get(binding.operationId) ?? this.planFor(binding, command);
    return {
      version: command.version,
      command: {
        executable: command.executable,
        args: [...command.args],
        workingDirectory: command.workingDirectory,
        timeoutSeconds: command.timeoutSeconds,
      },
      maxLogBytes: request.profile.resources.maxLogBytes,
      plan: snapshotPlan(plan, command),
    };
  }

  private async lookup(operationId: string, role: PodRole, expected: StoredBinding) {
    const row = await findBuildTestPod(this.db, operationId, role);
    if (row !== null) assertBinding(row, expected);
    return row;
  }
}

const deleted = (role: PodRole, operationId: string) =>
  definitive('pod-deleted', `The ${role} Pod of operation ${operationId} was deleted; it never runs again`);
