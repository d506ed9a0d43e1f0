// `--provider agent-sandbox`: the production Agent Sandbox adapter in every child, against the fake
// Kubernetes API (test/fakes/kube-api) running in the harness's own process over HTTPS, with the
// upstream CRD schemas (test/support/crd-dir.ts) and the cluster objects an installation holds: the
// VM RuntimeClass, the project's CiliumNetworkPolicy, and each Workspace's PVC and PV (planted as
// the driver creates the volume, as the storage lifecycle would). The provider's faults here are
// the fake's own, armed on a seeded cadence (5xx on create, delete or list, an answer dropped after
// the change was applied, latency), and counted from the fake's request log.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LABELS } from '../providers/agent-sandbox/names.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import { crdDir, crdsPresent } from '../test/support/crd-dir.ts';
import { P, validEnv } from '../test/support/agent-sandbox-fixtures.ts';
import {
  NAMESPACE,
  RUNTIME_CLASS_NAME,
  RUNTIME_HANDLER,
  adapterOn,
  ciliumPolicyObject,
  plantWorkspace,
  runtimeClassObject,
} from '../test/support/fake-cluster-harness.ts';
import { startFakeKubeApi, type FakeKubeApi, type ObjectLifetime } from '../test/fakes/kube-api/index.ts';
import type { Queryable } from '../store/db.ts';
import { POD_IP, startChaosAgentHosts } from './agent-host.ts';
import { deriveSeed, Rng } from './random.ts';

export interface ChaosKube {
  /** What every child (and `sandlot audit`) needs to run the adapter against the fake. */
  env: Record<string, string>;
  /** The adapter in the harness's process, for the provider identity the run selection names. */
  provider: SandboxProvider;
  /** Plants a Workspace volume's PVC and PV, as the storage lifecycle would before provisioning. */
  plantVolume(
    environmentId: string,
    volume: { volumeId: string; resourceGeneration: number; dataGeneration: number },
  ): void;
  /** Arms the fake's faults on a seeded cadence until stopped. */
  startFaults(seed: number): () => void;
  /** Injected faults that fired, by kind (from the fake's request log: 5xx answers, dropped answers). */
  firedFaults(): Record<string, number>;
  /** Claim names created per operation (its label), from the fake's request log. */
  claimsByOperation(): Map<string, Set<string>>;
  /** When every object the fake ever stored existed (its lifetime log). */
  objectLifetimes(): ObjectLifetime[];
  /** What the Pods' AgentHost stand-in answered, by request and status (chaos/agent-host.ts). */
  agentHostAnswers(): Record<string, number>;
  close(): Promise<void>;
}

/** Null (with the reason) when the CRD schemas the fake validates against are not there. */
export async function startChaosKube(
  runDir: string,
  tenantId: string,
  projectId: string,
  db: Queryable,
): Promise<ChaosKube | string> {
  if (!crdsPresent) return `no Agent Sandbox CRD schemas in ${crdDir} (set SANDLOT_CRD_DIR)`;
  // Every Pod's IP is the loopback address the AgentHost stand-in answers on.
  const fake: FakeKubeApi = await startFakeKubeApi({ namespace: NAMESPACE, controller: { podIp: POD_IP } });
  const hosts = await startChaosAgentHosts(fake, db, NAMESPACE, runDir);
  if (typeof hosts === 'string') {
    await fake.close();
    return hosts;
  }
  fake.objects.put(runtimeClassObject());
  fake.objects.put(ciliumPolicyObject({ tenantId, projectId, generation: 1 }));
  const kubeconfig = join(runDir, 'kubeconfig');
  await writeFile(kubeconfig, fake.kubeconfig({ namespace: NAMESPACE }), { mode: 0o600 });
  const settings = {
    [`${P}NAMESPACE`]: NAMESPACE,
    [`${P}RUNTIME_CLASS_NAME`]: RUNTIME_CLASS_NAME,
    [`${P}EXPECTED_RUNTIME_HANDLER`]: RUNTIME_HANDLER,
    [`${P}RECONCILIATION_TIMEOUT_SECONDS`]: '10',
    [`${P}POLL_INTERVAL_MILLISECONDS`]: '50',
    // The fake API applies a request before it answers: nothing of a call lands a second later.
    [`${P}API_SERVER_REQUEST_TIMEOUT_SECONDS`]: '1',
    // The AgentHost launch profile: each Sandbox gets its own Service, its lease an endpoint.
    [`${P}AGENT_HOST_CONFIG_MAP_NAME`]: 'agenthost-config',
    [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'agenthost-tls',
  };
  const env = Object.fromEntries(
    Object.entries(validEnv({ ...settings, KUBECONFIG: kubeconfig })).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  return {
    env: { ...env, ...hosts.env, SANDLOT_PROVIDER: 'agent-sandbox' },
    provider: adapterOn(fake, settings),
    plantVolume(environmentId, volume) {
      plantWorkspace(fake, { owner: { environmentId }, workspace: volume });
    },
    startFaults(seed) {
      const rng = new Rng(deriveSeed(seed, 'kube-faults'));
      const claims = 'sandboxclaims';
      const arm = () => {
        const kind = rng.int(0, 4);
        if (kind === 0) fake.faults.failNext({ verb: 'create', resource: claims }, 503);
        else if (kind === 1) fake.faults.dropResponseAfterApply({ verb: 'create', resource: claims });
        else if (kind === 2) fake.faults.failNext({ verb: 'delete', resource: claims }, 500);
        else if (kind === 3) fake.faults.listErrors(claims, 1, 500);
        else fake.faults.dropResponseAfterApply({ verb: 'delete', resource: claims });
      };
      const timer = setInterval(arm, 1_500);
      return () => {
        clearInterval(timer);
        fake.faults.clear();
      };
    },
    firedFaults() {
      const fired: Record<string, number> = {};
      for (const r of fake.requests) {
        const status = r.status ?? 200;
        if (status !== 0 && status < 500) continue;
        const key = `${status === 0 ? 'answer dropped after apply' : `${status}`} / ${r.verb ?? r.method} ${r.resource ?? ''}`;
        fired[key] = (fired[key] ?? 0) + 1;
      }
      return fired;
    },
    claimsByOperation() {
      const byOperation = new Map<string, Set<string>>();
      for (const r of fake.requests) {
        if (r.verb !== 'create' || r.resource !== 'sandboxclaims') continue;
        if (r.status !== 0 && (r.status ?? 0) >= 300) continue;
        const metadata = (r.body as { metadata?: { name?: string; labels?: Record<string, string> } })
          ?.metadata;
        const operationId = metadata?.labels?.[LABELS.operationId];
        if (operationId === undefined || metadata?.name === undefined) continue;
        byOperation.set(operationId, (byOperation.get(operationId) ?? new Set()).add(metadata.name));
      }
      return byOperation;
    },
    objectLifetimes: () => fake.objects.lifetimes(),
    agentHostAnswers: () => hosts.answered(),
    close: async () => {
      await hosts.close();
      await fake.close();
    },
  };
}
