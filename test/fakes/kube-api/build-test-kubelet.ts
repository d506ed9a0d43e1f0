// A deterministic BuildTest "kubelet" for the fake: what the helpers and the command do inside Pods
// labelled `sandlot.dev/build-test-role`. Each Workspace PVC is a real directory under a temp dir.
// The `preparation` helper clones the seed bundle into the PVC directory and answers the receipt;
// `release` runs the operation's seeded plan there (providers/simulated/build-test-plan.ts; default:
// exit 0, each declared output written), sets the plan's `output` as the command container's log
// (`fake.podLogs`), and makes the Pod terminal with the command container's exit code, or ends it
// as the kubelet would for the plan's interruption: `timeout` is the active deadline
// (DeadlineExceeded), `output-limit` the eviction for the command container's ephemeral-storage
// limit (its log counts against it), `cancelled` an eviction for node pressure; an evicted command
// container is terminated with 137. The collector walks the PVC directory with the simulated collector, seals the document in the
// Pod's private directory on its first `receipt`, and serves the receipt and the sealed bytes.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  AcceptedCommandSpec,
  BuildTestBinding,
  InterruptReason,
} from '../../../providers/build-test.ts';
import { chunksOfBytes } from '../../../lib/capture-stream.ts';
import { collect, type Collection } from '../../../providers/simulated/build-test-collector.ts';
import {
  applyPlan,
  defaultPlan,
  snapshotPlan,
  type SimulatedCommandPlan,
} from '../../../providers/simulated/build-test-plan.ts';
import { GitRefused, prepareRepository } from '../../../providers/simulated/build-test-repository.ts';
import { preparationHandler, type ExecContext, type ExecHandler } from './exec-handlers.ts';
import type { KubeObject } from './types.ts';
import type { FakeKubeApi } from './index.ts';
import type { HelperRequest } from '../../../providers/agent-sandbox/build-test-pods.ts';

const ROLE = 'sandlot.dev/build-test-role';
const REQUEST = 'sandlot.dev/build-test-request';
const FINGERPRINT = 'sandlot.dev/request-fingerprint';

export interface FakeBuildTest {
  /** The plan an operation's command follows (by operation ID); default exit 0 with outputs written. */
  plans: Map<string, SimulatedCommandPlan>;
  /** Fields merged into a receipt before it is answered, by operation ID: the seeded receipt faults. */
  preparationReceiptPatch: Map<string, Record<string, unknown>>;
  collectorReceiptPatch: Map<string, Record<string, unknown>>;
  /** UIDs of the command Pods whose command ran. */
  released: Set<string>;
  /** What each collector sealed, by its Pod UID. */
  sealed: Map<string, Buffer>;
  /** A promise a collector's capture answer waits on before its last piece, by the collector's Pod UID. */
  captureHold: Map<string, Promise<void>>;
  /** The directory holding a Workspace PVC's content. */
  workspaceDir(pvcName: string): string;
  close(): Promise<void>;
}

/** How the kubelet ends a command Pod for each interruption (pkg/kubelet/eviction message formats). */
const ENDINGS: Record<InterruptReason, { reason: string; message: string; exitCode?: number }> = {
  timeout: {
    reason: 'DeadlineExceeded',
    message: 'Pod was active on the node longer than the specified deadline',
  },
  'output-limit': {
    reason: 'Evicted',
    message: 'Container command exceeded its local ephemeral storage limit "1Gi". ',
    exitCode: 137,
  },
  cancelled: { reason: 'Evicted', message: 'The node was low on resource: memory. ', exitCode: 137 },
};

/** The buffer the kubelet copies a container's output through (io.Copy's 32 KiB). */
const KUBELET_COPY_BYTES = 32 * 1024;

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const budget = () => ({ signal: new AbortController().signal, deadline: new Date(Date.now() + 60_000) });

function requestOf(pod: KubeObject): HelperRequest {
  return JSON.parse(pod.metadata.annotations?.[REQUEST] ?? 'null') as HelperRequest;
}

/** The host directory behind `path` inside `container`: its Workspace mount, resolved to the PVC dir. */
function hostPath(fake: FakeBuildTest, pod: KubeObject, container: string, path: string): string {
  const spec = pod.spec as {
    containers: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[];
    initContainers?: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[];
    volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[];
  };
  const c = [...(spec.initContainers ?? []), ...spec.containers].find((x) => x.name === container);
  for (const mount of c?.volumeMounts ?? []) {
    const claim = spec.volumes.find((v) => v.name === mount.name)?.persistentVolumeClaim?.claimName;
    if (claim !== undefined && path.startsWith(`${mount.mountPath}/`)) {
      return join(fake.workspaceDir(claim), path.slice(mount.mountPath.length + 1));
    }
  }
  throw new Error(`${path} is not on a Workspace mount of ${container}`);
}

function bindingOf(request: HelperRequest): BuildTestBinding {
  const checkpoint = {
    tenantId: '',
    projectId: '',
    runId: '',
    stepId: '',
    checkpointId: request.checkpointId,
  };
  return {
    operationId: request.operationId,
    checkpoint,
    requestFingerprint: request.requestFingerprint,
    acceptedCommandHash: '',
  };
}

function commandOf(request: HelperRequest): AcceptedCommandSpec {
  return {
    version: request.version,
    executable: '/fake',
    args: [],
    workingDirectory: request.workingDirectory,
    environment: {},
    timeoutSeconds: request.timeoutSeconds,
    outputs: request.outputs,
    source: request.source,
  };
}

export async function installBuildTest(fake: FakeKubeApi): Promise<FakeBuildTest> {
  const root = await mkdtemp(join(tmpdir(), 'sandlot-fake-bt-'));
  const prepared = new Set<string>();
  const collections = new Map<string, Collection>();
  const privateDir = async (uid: string) => {
    const dir = join(root, 'pods', uid);
    await mkdir(join(dir, 'home'), { recursive: true });
    return dir;
  };
  const bt: FakeBuildTest = {
    plans: new Map(),
    preparationReceiptPatch: new Map(),
    collectorReceiptPatch: new Map(),
    released: new Set(),
    sealed: new Map(),
    captureHold: new Map(),
    workspaceDir: (pvcName) => join(root, 'pvc', pvcName),
    close: () => rm(root, { recursive: true, force: true }),
  };

  /** Ends the command Pod as the plan says: Succeeded on exit 0, Failed otherwise or interrupted. */
  function finish(pod: KubeObject, exitCode: number, interrupt: InterruptReason | null): void {
    const ref = {
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: pod.metadata.namespace ?? '',
      name: pod.metadata.name,
    };
    const ended = interrupt === null ? null : ENDINGS[interrupt];
    const code = ended?.exitCode ?? exitCode;
    fake.objects.mutate(ref, (stored) => {
      const finishedAt = new Date().toISOString();
      const reason = code === 0 ? 'Completed' : 'Error';
      const terminated = { exitCode: code, reason, startedAt: finishedAt, finishedAt };
      stored.status = {
        ...stored.status,
        phase: code === 0 && ended === null ? 'Succeeded' : 'Failed',
        ...(ended === null ? {} : { reason: ended.reason, message: ended.message }),
        containerStatuses: [{ name: 'command', ready: false, restartCount: 0, state: { terminated } }],
      };
    });
  }

  async function preparation(ctx: ExecContext, request: HelperRequest): Promise<number> {
    const pod = ctx.pod;
    const uid = pod.metadata.uid;
    const action = ctx.command.at(-1);
    await ctx.identify(pod.metadata.annotations?.[FINGERPRINT] ?? '');
    const stdin = await ctx.readStdin();
    const repo = hostPath(bt, pod, 'preparation', request.repositoryPath);
    if (action === 'prepare') {
      const source = request.source;
      if (source === null || sha256(stdin) !== source.seedSha256 || stdin.length !== source.seedLength) {
        await ctx.stderr('preparation: the seed is not the accepted one\n');
        return 3;
      }
      const dir = await privateDir(uid);
      try {
        await prepareRepository(dir, repo, stdin, source.baseSha, {
          home: join(dir, 'home'),
          options: budget(),
        });
      } catch (error) {
        if (!(error instanceof GitRefused)) throw error;
        await ctx.stderr(`preparation: ${error.message}\n`);
        return 4;
      }
      prepared.add(uid);
      const receipt = {
        operationId: request.operationId,
        checkpointId: request.checkpointId,
        sourceSha256: sha256(stdin),
        path: request.repositoryPath,
        podUid: uid,
        ...bt.preparationReceiptPatch.get(request.operationId),
      };
      await ctx.stdout(`${JSON.stringify(receipt)}\n`);
      return 0;
    }
    if (action !== 'release') return 2;
    if (request.version === 2 && !prepared.has(uid)) return 5;
    if (!bt.released.has(uid)) {
      bt.released.add(uid);
      await mkdir(join(repo, request.workingDirectory), { recursive: true });
      const command = commandOf(request);
      const plan = bt.plans.get(request.operationId) ?? defaultPlan(bindingOf(request), command);
      const snapshot = snapshotPlan(plan, command);
      await applyPlan(repo, snapshot);
      fake.podLogs.set(pod.metadata.namespace ?? '', pod.metadata.name, 'command', snapshot.output);
      finish(pod, snapshot.exitCode, snapshot.interrupt?.reason ?? null);
    }
    await ctx.stdout('{"released":true}\n');
    return 0;
  }

  async function collector(ctx: ExecContext, request: HelperRequest): Promise<number> {
    const pod = ctx.pod;
    const uid = pod.metadata.uid;
    await ctx.identify(pod.metadata.annotations?.[FINGERPRINT] ?? '');
    await ctx.readStdin();
    let collection = collections.get(uid);
    if (collection === undefined) {
      const repo = hostPath(bt, pod, 'collector', request.repositoryPath);
      const dir = await privateDir(uid);
      collection = await collect({
        run: {
          version: request.version,
          outputs: request.outputs,
          source: request.source,
          commandPodUid: request.commandPodUid ?? '',
        },
        binding: bindingOf(request),
        podUid: uid,
        repo,
        preparation: request.preparation ? { ...request.preparation, path: repo } : null,
        git: { home: join(dir, 'home'), options: budget() },
      });
      collections.set(uid, collection);
      if (collection.sealed && collection.document !== null) bt.sealed.set(uid, collection.document.bytes);
    }
    if (ctx.command.at(-1) === 'capture') {
      if (!collection.sealed || collection.document === null) return 5;
      // As a kubelet copies a container's stdout onto the stream: one buffer of it at a time.
      const pieces = [...chunksOfBytes(collection.document.bytes, KUBELET_COPY_BYTES)];
      for (const [index, piece] of pieces.entries()) {
        if (index === pieces.length - 1) await bt.captureHold.get(uid);
        await ctx.stdout(piece);
      }
      return 0;
    }
    const answer = collection.sealed
      ? {
          state: 'sealed',
          receipt: { ...collection.receipt, ...bt.collectorReceiptPatch.get(request.operationId) },
        }
      : { state: 'failed', reason: collection.reason, message: collection.message };
    await ctx.stdout(`${JSON.stringify(answer)}\n`);
    return 0;
  }

  const onPreparation: ExecHandler = (ctx) =>
    ctx.pod.metadata.labels?.[ROLE] === undefined
      ? preparationHandler(ctx)
      : preparation(ctx, requestOf(ctx.pod));
  fake.execHandlers.set('preparation', onPreparation);
  fake.execHandlers.set('collector', (ctx) => collector(ctx, requestOf(ctx.pod)));
  return bt;
}
