// The whole suspend/resume cycle on the Agent Sandbox adapter against the fake Kubernetes API
// (which validates every object against the real Agent Sandbox CRD schemas): resolve → flush →
// placement release → resume prepare → verify → bootstrap, through the real HTTP app on PostgreSQL. Core is
// the embedded RuntimeCore stand-in, the Host the embedded AgentHost with a real Workspace tree on
// disk, network policies the Cilium verifier and writer on the fake, and the adapter runs the
// AgentHost launch profile, so each lease's placement names its owned Service and singleton Pod.
//
// What it pins: the new Host hashes exactly the tree the flush receipt named; the data generation
// moves 1 → 2 and the lifecycle and network generations by one; the new Sandbox is another object
// that mounts the very same retained PVC (name and UID) while the old one is gone; the project's
// CiliumNetworkPolicy exists at the new generation and selects the new Pod; the new lease maps the
// new Pod and records its Host endpoint (the new Pod's UID and IP, its Service's DNS name) although
// the provision read it back pending; replays make no second Sandbox.
//
// The resume's provision runs with the fake's controllers held, so the adapter's read-back answers
// `pending` every time (as on a real cluster, where a Pod takes seconds to start), not by chance.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { RestoredWorkspace } from '../../actors/resume/requests.ts';
import { EmbeddedRuntimeCore } from '../../actors/runtime-core/runtime-core-embedded.ts';
import { EmbeddedRuntimeEvents } from '../../actors/runtime-events/runtime-events-embedded.ts';
import { agentHostEndpointOf } from '../../actors/sandbox/readiness.ts';
import { CiliumNetworkPolicyWriter } from '../../providers/agent-sandbox/cilium-writer.ts';
import { LABELS, objectNames, projectHashOf, pvcNameOf } from '../../providers/agent-sandbox/names.ts';
import { readCurrentLease, readLeaseByOperation } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { P } from '../support/agent-sandbox-fixtures.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  kubeConfigOf,
  refs,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { waitForLease } from '../support/sandbox-flow.ts';
import {
  coreStartsRuntime,
  expectPrepared,
  prepareResume,
  suspend,
  type Suspended,
} from '../support/resume-flow.ts';
import { activeSandbox, type ActiveSandbox } from '../support/suspend-flow.ts';

const CORE = 'agents.x-k8s.io/v1beta1';
/** The AgentHost launch profile: the Sandbox gets its own Service, the placement its endpoint. */
const PROFILE = {
  [`${P}AGENT_HOST_CONFIG_MAP_NAME`]: 'agenthost-config',
  [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'agenthost-tls',
};

/** The Workspace PVC a Pod (or a Sandbox's Pod template) mounts, by claim name. */
const mountedClaims = (podSpec: unknown): string[] =>
  ((podSpec as { volumes?: { persistentVolumeClaim?: { claimName: string } }[] } | undefined)?.volumes ?? [])
    .map((v) => v.persistentVolumeClaim?.claimName)
    .filter((name): name is string => name !== undefined);

describe.skipIf(skipWithoutCrds)(
  'suspend and resume on the Agent Sandbox adapter (fake Kubernetes API)',
  () => {
    let fake: FakeKubeApi;
    let handle: BackendHandle;
    let h: Harness;
    let host: EmbeddedAgentHost;
    let stateDir: string;
    let runs = 0;

    beforeAll(async () => {
      fake = await startFakeKubeApi({ namespace: NAMESPACE });
      fake.objects.put(runtimeClassObject());
      handle = await openBackend('postgres');
      stateDir = await mkdtemp(join(tmpdir(), 'sandlot-k8s-suspend-'));
      host = new EmbeddedAgentHost({ db: handle.db, stateDir });
      const kubeConfig = kubeConfigOf(fake);
      h = await buildHarness(handle.db, {
        workers: { callTimeoutMs: 15_000, observeEveryMs: 200 },
        sandboxProvider: withWorkspaces(fake, adapterOn(fake, PROFILE, kubeConfig)),
        networkPolicies: verifierOn(fake, kubeConfig),
        networkPolicyWriter: new CiliumNetworkPolicyWriter({ options: { namespace: NAMESPACE }, kubeConfig }),
        agentHost: host,
        runtimeCore: new EmbeddedRuntimeCore(handle.db),
        runtimeEvents: new EmbeddedRuntimeEvents(handle.db),
      });
    }, 120_000);
    afterAll(async () => {
      await h?.close();
      await handle?.close();
      await fake?.close();
      if (stateDir !== undefined) await rm(stateDir, { recursive: true, force: true });
    });

    const post = (sandbox: ActiveSandbox, path: string, body: unknown) =>
      h.request('POST', path, { token: sandbox.s.token, body });
    const get = (ref: ReturnType<typeof refs.pod>) => fake.objects.get(ref);
    const policiesAt = (project: string, generation: number) =>
      fake.objects.list(
        { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy' },
        {
          namespace: NAMESPACE,
          labelSelector: `${LABELS.projectHash}=${projectHashOf('acme', project)},${LABELS.networkPolicyGeneration}=${generation}`,
        },
      );
    /** Every Sandbox in the fake whose Pod template mounts the PVC: one placement at a time. */
    const sandboxesOn = (pvcName: string) =>
      fake.objects
        .list({ apiVersion: CORE, kind: 'Sandbox' }, { namespace: NAMESPACE })
        .filter((x) =>
          mountedClaims((x.spec as { podTemplate?: { spec?: unknown } }).podTemplate?.spec).includes(pvcName),
        );

    /** A fresh Environment in its own project (a resume moves the project's policy generation), started. */
    async function startedSandbox(): Promise<ActiveSandbox> {
      const n = ++runs;
      const project = `k8s-cycle-${n}`;
      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: project, generation: 1 }));
      const sandbox = await activeSandbox(h, `run-k8s-cycle-${n}`, project);
      // The Host answers once the exact observation saw its Pod started (the observer records it).
      await waitForLease(h, sandbox.s, (l) => l['state'] === 'Active' && l['phase'] === 'started', 30_000);
      return { ...sandbox, lease: (await readCurrentLease(h.db, sandbox.s.environmentId))! };
    }

    const suspended = (sandbox: ActiveSandbox) => suspend(h, host, sandbox);
    const prepare = (s: Suspended) => prepareResume(h, s);

    /**
     * Prepare, with the fake's controllers held while the new claim is made: the adapter's read-back
     * then answers `pending` (no Sandbox, no Pod yet), as it does on a real cluster, where a Pod
     * takes seconds to start; the lease learns the rest from later observations.
     */
    async function prepareWhileStarting(s: Suspended): Promise<Response> {
      fake.controller.pause();
      try {
        const answer = prepare(s);
        const until = Date.now() + 30_000;
        for (;;) {
          const lease = await readCurrentLease(h.db, s.sandbox.s.environmentId);
          if (lease?.state === 'Active' && lease.operationId !== s.sandbox.lease.operationId) break;
          if (Date.now() > until) throw new Error('the resume never provisioned its new lease');
          await new Promise((r) => setTimeout(r, 20));
        }
        expect((await readCurrentLease(h.db, s.sandbox.s.environmentId))?.resource?.phase).toBe('pending');
        fake.controller.resume();
        return await answer;
      } finally {
        fake.controller.resume();
      }
    }

    /** What the first case resumed, for the endpoint case after it. */
    let resumed:
      | {
          environmentId: string;
          operationId: string;
          oldPodUid: string;
          endpoint: Record<string, unknown>;
        }
      | undefined;

    it('resumes on a new Sandbox over the same retained PVC, and the new Host hashes the flushed tree', async () => {
      const sandbox = await startedSandbox();
      const oldLease = sandbox.lease;
      const oldNames = objectNames(oldLease.operationId);
      const pvcName = pvcNameOf(sandbox.volume.volumeId)!;
      const pvc = get({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: NAMESPACE,
        name: pvcName,
      });
      expect(pvc?.metadata.uid).toEqual(expect.any(String));
      const oldPod = get(refs.pod(oldNames.claim))!;
      const oldSandbox = get(refs.sandbox(oldNames.claim))!;
      expect(oldPod).toBeDefined();
      expect(oldLease.resource?.placement['podUid']).toBe(oldPod.metadata.uid);

      const s = await suspended(sandbox);
      const { manifest, flush } = s;
      expect(sandbox.volume.dataGeneration).toBe(1);
      expect(flush.nextDataGeneration).toBe(2);

      // The release retained the PVC (same UID) and left no Sandbox, claim or Pod of the old lease.
      expect((await readLeaseByOperation(h.db, oldLease.operationId))?.state).toBe('Released');
      expect(await readVolume(h.db, sandbox.volume.volumeId)).toMatchObject({
        state: 'Available',
        dataGeneration: 2,
      });
      expect(get(refs.claim(oldNames.claim))).toBeUndefined();
      expect(get(refs.sandbox(oldNames.claim))).toBeUndefined();
      expect(get(refs.pod(oldNames.claim))).toBeUndefined();
      expect(
        get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: NAMESPACE, name: pvcName })
          ?.metadata.uid,
      ).toBe(pvc?.metadata.uid);

      const res = await prepareWhileStarting(s);
      if (res.status !== 200) {
        const attempts = await h.db.query(
          'SELECT kind, state, error FROM provider_attempts WHERE environment_id = $1 ORDER BY created_at',
          [sandbox.s.environmentId],
        );
        throw new Error(`prepare: ${res.status} ${await res.text()} ${JSON.stringify(attempts.rows)}`);
      }
      const { prepared, restored } = await expectPrepared(res, manifest);
      expect(restored.workspace.dataGeneration).toBe(2);

      // The new lease is a new Sandbox object on the very same PVC.
      const newLease = (await readCurrentLease(h.db, sandbox.s.environmentId))!;
      expect(newLease).toMatchObject({ operationId: restored.lease.operationId, state: 'Active' });
      expect(newLease.operationId).not.toBe(oldLease.operationId);
      const newNames = objectNames(newLease.operationId);
      const newSandbox = get(refs.sandbox(newNames.claim))!;
      const newPod = get(refs.pod(newNames.claim))!;
      const service = get(refs.service(newNames.claim))!;
      expect(newSandbox).toBeDefined();
      expect(newSandbox.metadata.uid).not.toBe(oldSandbox.metadata.uid);
      expect(newPod.metadata.uid).not.toBe(oldPod.metadata.uid);
      const sandboxPodSpec = (newSandbox.spec as { podTemplate?: { spec?: unknown } }).podTemplate?.spec;
      expect(mountedClaims(sandboxPodSpec)).toEqual([pvcName]);
      expect(mountedClaims(newPod.spec)).toEqual([pvcName]);
      const template = fake.objects
        .list(
          { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxTemplate' },
          { namespace: NAMESPACE },
        )
        .find((t) => t.metadata.name === newNames.template);
      expect(template?.metadata.annotations?.['sandlot.dev/workspace-pvc-uid']).toBe(pvc?.metadata.uid);
      expect(sandboxesOn(pvcName).map((x) => x.metadata.name)).toEqual([newNames.claim]);

      // The project's policy at the new generation is in the fake and selects the new Pod.
      const [policy] = policiesAt(sandbox.project, 2);
      expect(policy).toBeDefined();
      const selector = (policy!.spec as { endpointSelector: { matchLabels: Record<string, string> } })
        .endpointSelector.matchLabels;
      for (const [key, value] of Object.entries(selector))
        expect(newPod.metadata.labels?.[key], key).toBe(value);

      // The new lease maps the new Pod, whose owned Service resolves to it alone; where its Host
      // answers is asserted by the case below.
      expect(newLease.resource?.placement['podUid']).toBe(newPod.metadata.uid);
      expect(service.metadata.ownerReferences?.[0]).toMatchObject({
        kind: 'Sandbox',
        uid: newSandbox.metadata.uid,
      });
      resumed = {
        environmentId: sandbox.s.environmentId,
        operationId: newLease.operationId,
        oldPodUid: oldPod.metadata.uid ?? '',
        endpoint: {
          podUid: newPod.metadata.uid,
          podIp: (newPod.status as { podIP?: string }).podIP,
          serverName: (newSandbox.status as { serviceFQDN?: string }).serviceFQDN,
          port: 8443,
        },
      };

      const verify = () =>
        post(sandbox, '/internal/runtime/resume/verify', { ...s.request, restoredWorkspace: restored });
      const verified = await verify();
      if (verified.status !== 200) throw new Error(`verify: ${verified.status} ${await verified.text()}`);
      const receipt = (await verified.json()) as {
        contentProof: { treeHash: string; fileCount: number; byteCount: number };
        networkPolicyGeneration: number;
      };
      expect(receipt.contentProof).toMatchObject({
        treeHash: flush.receipt.flush.treeHash,
        fileCount: flush.receipt.flush.fileCount,
        byteCount: flush.receipt.flush.byteCount,
      });
      expect(receipt.networkPolicyGeneration).toBe(2);

      // Replays answer the same: no second Sandbox, lease or advance.
      const again = await prepare(s);
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual(prepared);
      const reverified = await verify();
      expect(reverified.status).toBe(200);
      expect(((await reverified.json()) as typeof receipt).contentProof).toMatchObject({
        treeHash: receipt.contentProof.treeHash,
        fileCount: receipt.contentProof.fileCount,
      });
      expect(sandboxesOn(pvcName).map((x) => x.metadata.name)).toEqual([newNames.claim]);
      const leases = await h.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM sandbox_leases WHERE environment_id = $1',
        [sandbox.s.environmentId],
      );
      expect(leases.rows[0]?.n).toBe(2);
      const advances = await h.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM environment_journal WHERE environment_id = $1 AND event_type = 'environment.advance'`,
        [sandbox.s.environmentId],
      );
      expect(advances.rows[0]?.n).toBe(1);
      expect(policiesAt(sandbox.project, 2)).toHaveLength(1);
      expect(policiesAt(sandbox.project, 3)).toEqual([]);

      // Phase 4: Core commits and registers the new Runtime; bootstrap activates it on the Host
      // bound to exactly the new Pod, with the acknowledged configuration and the flushed cache.
      const body = await coreStartsRuntime(h, s, restored as unknown as RestoredWorkspace);
      const started = await post(sandbox, '/internal/runtime/resume/bootstrap', body);
      if (started.status !== 200) throw new Error(`bootstrap: ${started.status} ${await started.text()}`);
      const outcome = (await started.json()) as {
        outcome: string;
        attempt: { attemptSeq: number; deliveries: number };
        receipt: {
          binding: { operationId: string; podUid: string };
          configurationSha256: string;
          recovery: { mode: string };
        };
      };
      expect(outcome).toMatchObject({ outcome: 'Activated', attempt: { attemptSeq: 1, deliveries: 1 } });
      expect(outcome.receipt.binding).toMatchObject({
        operationId: newLease.operationId,
        podUid: newPod.metadata.uid,
      });
      expect(outcome.receipt.configurationSha256).toBe(s.manifest.configuration?.sha256);
      expect(outcome.receipt.recovery.mode).toBe('NativeCache');
      const replayed = await post(sandbox, '/internal/runtime/resume/bootstrap', body);
      expect(await replayed.json()).toEqual(outcome);
    }, 180_000);

    // The provision's read-back answered `pending` (above), so it recorded no placement; the later
    // exact describes fill it for the mapped Pod (actors/attempts.ts observedEvent →
    // `sandbox.observed` → machines/environment-updates.ts recordObservation), so an HTTPS Host is
    // reachable on the resumed lease.
    it("records the new Host's endpoint: the new Pod's UID and IP, its Service's DNS name", async () => {
      expect(resumed).toBeDefined();
      const lease = (await readCurrentLease(h.db, resumed!.environmentId))!;
      expect(lease.operationId).toBe(resumed!.operationId);
      expect(agentHostEndpointOf(lease)).toEqual(resumed!.endpoint);
      expect(agentHostEndpointOf(lease)?.podUid).not.toBe(resumed!.oldPodUid);
    });
  },
);
