// BuildTest on Agent Sandbox: the command and collector Pods of one operation in the lease's
// namespace, on the lease's exact Workspace PVC, offline. Every start is idempotent per operation:
// names derive from the operation ID, so a repeat (another worker, a reconcile) meets the same Pod
// (AlreadyExists), which is adopted only after its owner binding, labels and binding annotations are
// checked. The command starts only after the preparation receipt matched: the runner records the
// checked receipt on the Pod, then releases the command through the helper; a receipt that does not
// match is recorded as `sandlot.dev/preparation-refused` and the command is never released (the Pod
// stays until cleanup deletes it; observeCommand answers `failed`/`preparation-failed`). An exited
// command's observation carries its log, read back bounded by the maxLogBytes stamped on the Pod
// (build-test-log.ts); a log that cannot be read is marked unavailable and never decides anything.
import { canonicalJson } from '../../lib/canonical-json.ts';
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
import { definitive, ProviderError, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import { BuildTestKube } from './build-test-kube.ts';
import {
  awaitHelper,
  collectorCaptureStream,
  collectorReceipt,
  prepare,
  release,
} from './build-test-helper.ts';
import { verifiedCapture } from '../../lib/capture-stream.ts';
import { resolveLease, leaseSnapshot } from './build-test-lease.ts';
import { evictionOf } from './build-test-evictions.ts';
import { readCommandLog } from './build-test-log.ts';
import { BUILD_TEST_ANNOTATIONS as A, buildTestPodName, COLLECTOR_CONTAINER } from './build-test-names.ts';
import {
  assertOurPod,
  commandObservationOf,
  helperRequestOf,
  isTerminal,
  maxLogBytesOf,
  podRefOf,
} from './build-test-observe.ts';
import {
  buildCollectorPod,
  buildCommandPod,
  commandRequest,
  type HelperRequest,
  type PodPlan,
} from './build-test-pods.ts';
import { ensureOffline, deleteOffline } from './build-test-policy.ts';
import { checkCollectorAnswer, checkPreparation, storedPreparation } from './build-test-receipts.ts';
import { checkCommand } from './build-test-checks.ts';
import type { KubeConfig, V1Pod } from './client-node.ts';
import { KubeClient } from './kube-client.ts';
import { budget } from './kube-errors.ts';
import { kubeConfigFor } from './create-provider.ts';
import { loadAgentSandboxOptions } from './options.ts';

export interface AgentSandboxBuildTestRunnerDeps {
  /** The adapter's KubeConfig: the same cluster, trust and credentials as its provider. */
  kubeConfig: KubeConfig;
  /** The adapter's namespace; a lease whose snapshot names another is refused. */
  namespace: string;
}

export class AgentSandboxBuildTestRunner implements BuildTestRunner {
  private readonly kubeConfig: KubeConfig;
  private readonly namespace: string;
  private readonly kube: KubeClient;
  private readonly pods: BuildTestKube;

  constructor(deps: AgentSandboxBuildTestRunnerDeps) {
    this.kubeConfig = deps.kubeConfig;
    this.namespace = deps.namespace;
    this.kube = new KubeClient(deps.kubeConfig);
    this.pods = new BuildTestKube(deps.kubeConfig);
  }

  startCommand(request: CommandPodRequest, options: CallOptions): Promise<PodRef> {
    return this.call('startCommand', options, async () => {
      checkCommand(request);
      const plan = await this.plan(request, options);
      const wanted = commandRequest(plan, request.command);
      const pod = await this.ensurePod(
        plan,
        'command',
        buildCommandPod(plan, request.command),
        wanted,
        options,
      );
      const ref = podRefOf(pod, 'command');
      const annotations = pod.metadata?.annotations ?? {};
      if (annotations[A.preparationRefused] !== undefined) return ref;
      const snapshot = leaseSnapshot(request.placement, this.kubeConfig, this.namespace);
      const pollMs = snapshot.pollIntervalMilliseconds;
      const ready = await awaitHelper(this.pods, this.namespace, ref.name, ref.uid, pollMs, options);
      // Ended or gone before it could be prepared: observeCommand reports what became of it.
      if (ready === null) return ref;
      const target = {
        namespace: this.namespace,
        pod: ready,
        fingerprint: request.binding.requestFingerprint,
      };
      if (request.seed !== null && storedPreparation(annotations[A.preparationReceipt]) === null) {
        const verdict = await this.prepared(target, request.seed, wanted, ref, options);
        if ('refused' in verdict) {
          await this.annotate(ref, { [A.preparationRefused]: verdict.refused }, options);
          return ref;
        }
        await this.annotate(ref, { [A.preparationReceipt]: canonicalJson(verdict.receipt) }, options);
      }
      await release(this.kubeConfig, target, options);
      return ref;
    });
  }

  observeCommand(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CommandObservation> {
    return this.call('observeCommand', options, async () => {
      const pod = await this.readPod(binding, placement, 'command', options);
      if (pod === null) return { state: 'absent' };
      const observed = commandObservationOf(pod);
      if (observed.state !== 'exited') return observed;
      const name = observed.pod.name;
      const log = await readCommandLog(this.pods, this.namespace, name, maxLogBytesOf(pod), options);
      return { ...observed, log };
    });
  }

  startCollector(request: CollectorRequest, options: CallOptions): Promise<PodRef> {
    return this.call('startCollector', options, async () => {
      const { binding, placement, command } = request;
      if ((command.version === 2) !== (command.source !== null)) {
        throw definitive('invalid-command', 'A version 2 command has a source; version 1 has none');
      }
      const plan = await this.plan(request, options);
      const commandPod = await this.readPod(binding, placement, 'command', options);
      if (commandPod === null) {
        throw definitive(
          'command-absent',
          `Operation ${binding.operationId} has no command Pod to collect from`,
        );
      }
      const observed = commandObservationOf(commandPod);
      if (observed.state !== 'exited' || observed.exitCode !== 0) {
        throw definitive(
          'command-not-succeeded',
          `Operation ${binding.operationId}'s command did not exit 0`,
        );
      }
      if (request.commandPod.role !== 'command' || request.commandPod.uid !== observed.pod.uid) {
        throw definitive(
          'command-pod-mismatch',
          `The command Pod named is not operation ${binding.operationId}'s`,
        );
      }
      if (canonicalJson(request.preparation) !== canonicalJson(observed.preparation)) {
        throw definitive('preparation-mismatch', 'The preparation receipt named is not the command Pod’s');
      }
      const wanted: HelperRequest = {
        ...commandRequest(plan, command),
        commandPodUid: observed.pod.uid,
        preparation: observed.preparation,
      };
      const pod = await this.ensurePod(plan, 'collector', buildCollectorPod(plan, wanted), wanted, options);
      return podRefOf(pod, 'collector');
    });
  }

  observeCollector(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CollectorObservation> {
    return this.call('observeCollector', options, async () => {
      const pod = await this.readPod(binding, placement, 'collector', options);
      if (pod === null) return { state: 'absent' };
      const ref = podRefOf(pod, 'collector');
      if (pod.status?.reason === 'DeadlineExceeded') {
        return {
          state: 'interrupted',
          pod: ref,
          reason: 'timeout',
          message: 'the collector passed its deadline',
        };
      }
      const eviction = evictionOf(pod, COLLECTOR_CONTAINER);
      if (eviction !== null) return { state: 'interrupted', pod: ref, ...eviction };
      if (isTerminal(pod) || pod.metadata?.deletionTimestamp) {
        const message = `the collector Pod ended before it answered (${pod.status?.phase ?? 'deleting'})`;
        return { state: 'interrupted', pod: ref, reason: 'cancelled', message };
      }
      if (pod.status?.phase !== 'Running') return { state: 'running', pod: ref };
      const target = { namespace: this.namespace, pod, fingerprint: binding.requestFingerprint };
      const answer = await collectorReceipt(this.kubeConfig, target, options);
      const checked = checkCollectorAnswer(answer.stdout, helperRequestOf(pod), ref.uid);
      return { ...checked, pod: ref };
    });
  }

  readCapture(ref: CaptureRef, options: CallOptions): Promise<AsyncIterable<Uint8Array>> {
    return this.call('readCapture', options, async () => {
      const pod = await this.readPod(ref.binding, ref.placement, 'collector', options);
      if (pod === null || pod.metadata?.uid !== ref.collectorPodUid) {
        throw definitive('capture-absent', `No collector Pod ${ref.collectorPodUid}`);
      }
      if (pod.status?.phase !== 'Running' || pod.metadata.deletionTimestamp) {
        throw definitive('capture-gone', `Collector Pod ${ref.collectorPodUid} no longer serves its capture`);
      }
      const target = { namespace: this.namespace, pod, fingerprint: ref.binding.requestFingerprint };
      const bytes = collectorCaptureStream(this.kubeConfig, target, ref.length, options);
      return verifiedCapture(bytes, ref, (why) =>
        definitive('capture-mismatch', `Collector Pod ${ref.collectorPodUid} answered ${why}`),
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
      leaseSnapshot(placement, this.kubeConfig, this.namespace);
      // Every UID is checked before any is deleted: a foreign one refuses the whole call.
      const found: (V1Pod | null)[] = [];
      for (const ref of pods) {
        if (ref.name !== buildTestPodName(binding.operationId, ref.role)) {
          throw definitive(
            'pod-not-ours',
            `Pod ${ref.name} is not operation ${binding.operationId}'s ${ref.role} Pod`,
          );
        }
        const pod = await this.pods.getPod(this.namespace, ref.name, options);
        const same = pod !== null && pod.metadata?.uid === ref.uid;
        if (same) assertOurPod(pod, binding, placement.lease, ref.role);
        found.push(same ? pod : null);
      }
      for (const [index, ref] of pods.entries()) {
        // 404 (gone) and 409 (the name now holds another UID) both mean this UID is gone.
        if (found[index] !== null) await this.pods.deletePod(this.namespace, ref.name, ref.uid, options);
        // The policy stays while a same-named Pod of another UID lives: it must not go online.
        const after = await this.pods.getPod(this.namespace, ref.name, options);
        if (after === null || after.metadata?.uid === ref.uid) {
          await deleteOffline(this.pods, this.namespace, binding, placement, ref.role, options);
        }
      }
    });
  }

  /** The lease read back and the Pods' common plan; refused definitively before anything exists. */
  private async plan(request: CommandPodRequest | CollectorRequest, options: CallOptions): Promise<PodPlan> {
    const { binding, placement, profile } = request;
    if (profile.egress !== 'deny-all')
      throw definitive('egress-not-denied', 'BuildTest Pods run only offline');
    const snapshot = leaseSnapshot(placement, this.kubeConfig, this.namespace);
    const lease = await resolveLease(this.kube, snapshot, placement, options);
    return {
      binding,
      owner: placement.lease.owner,
      leaseResourceId: placement.lease.resourceId,
      namespace: this.namespace,
      runtimeClassName: snapshot.runtimeClassName,
      profile,
      workspace: lease.workspace,
    };
  }

  /** Creates the deny-all policy, then the Pod; AlreadyExists adopts only our exact Pod. */
  private async ensurePod(
    plan: PodPlan,
    role: PodRole,
    body: V1Pod,
    wanted: HelperRequest,
    options: CallOptions,
  ) {
    await ensureOffline(this.pods, plan, role, options);
    const result = await this.pods.createPod(this.namespace, body, options);
    const name = body.metadata?.name ?? '';
    const pod = result.created ? result.object : await this.pods.getPod(this.namespace, name, options);
    if (pod === null) throw uncertain('already-exists-unreadable', `Pod ${name} exists but cannot be read`);
    assertOurPod(pod, plan.binding, { owner: plan.owner, resourceId: plan.leaseResourceId }, role);
    if (canonicalJson(helperRequestOf(pod)) !== canonicalJson(wanted)) {
      throw definitive('pod-not-ours', `Pod ${name} was started for another command`);
    }
    return pod;
  }

  private async readPod(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    role: PodRole,
    options: CallOptions,
  ) {
    leaseSnapshot(placement, this.kubeConfig, this.namespace);
    const pod = await this.pods.getPod(this.namespace, buildTestPodName(binding.operationId, role), options);
    if (pod !== null) assertOurPod(pod, binding, placement.lease, role);
    return pod;
  }

  private async prepared(
    target: { namespace: string; pod: V1Pod; fingerprint: string },
    seed: Uint8Array,
    wanted: HelperRequest,
    ref: PodRef,
    options: CallOptions,
  ) {
    try {
      const answer = await prepare(this.kubeConfig, target, seed, options);
      return checkPreparation(answer.stdout, wanted, ref.uid);
    } catch (error) {
      // The helper's contract: a non-zero exit prepared nothing (it refused the seed or the tree).
      if (error instanceof ProviderError && error.code === 'exec-exit-status') {
        return { refused: `the preparation helper refused: ${error.message}` };
      }
      throw error;
    }
  }

  private async annotate(ref: PodRef, annotations: Record<string, string>, options: CallOptions) {
    const outcome = await this.pods.patchPodAnnotations(this.namespace, ref, annotations, options);
    if (outcome !== 'patched')
      throw uncertain(`annotate-${outcome}`, `Pod ${ref.name} (${ref.uid}) could not be annotated`);
  }

  /** Budget checks around one call; a failure that is not a ProviderError is uncertain. */
  private async call<T>(what: string, options: CallOptions, body: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      budget.check(options, `BuildTest ${what}`);
      result = await body();
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', `Agent Sandbox BuildTest ${what} failed unexpectedly`, error);
    }
    budget.check(options, `BuildTest ${what}`);
    return result;
  }
}

/** The runner as `cli/compose.ts` would build it beside `createAgentSandbox` (same settings). */
export function createAgentSandboxBuildTestRunner(
  env: Readonly<Record<string, string | undefined>>,
): AgentSandboxBuildTestRunner {
  const options = loadAgentSandboxOptions(env);
  return new AgentSandboxBuildTestRunner({
    kubeConfig: kubeConfigFor(options.connection),
    namespace: options.namespace,
  });
}
