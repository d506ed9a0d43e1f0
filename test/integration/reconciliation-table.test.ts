// The spec's reconciliation table ("Observed condition → Reconciliation action") as one table-driven
// test over both providers: the simulated provider, and the Agent Sandbox adapter on the fake
// Kubernetes API over real HTTPS. Each row makes its observed condition happen for real (a provider
// fault, or a change behind Sandlot's back), lets the reconciliation the table names run (workers for
// the effects, `reconcileOnce` passes driven by the test), and checks the end state users rely on:
// the lease (GET …/sandbox), the provider attempts, the late-resource cleanup records, and what the
// provider actually holds.
//
// Rows elsewhere: lease expiry involves no provider call, so it is tested once, on the simulated
// provider, in test/integration/sandbox-expiry.test.ts; a resource of an older source lifecycle
// generation has its Workspace rule tested on snapshot fixtures in
// test/unit/environment-cleanup.test.ts until lifecycle generations advance (E12).
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicyVerifier } from '../../actors/ports.ts';
import { createLogger } from '../../lib/logger.ts';
import { objectNames, resourceIdOf, LABELS } from '../../providers/agent-sandbox/names.ts';
import type { OwnerBinding, ProviderResource, SandboxProvider } from '../../providers/provider.ts';
import { readAttemptsOfOperation } from '../../store/attempts.ts';
import { listSimulatedResources, markSimulatedResourceDeleted } from '../../store/simulated-resources.ts';
import { runnerDeps, startWorkers, type WorkerHost } from '../../workers/host.ts';
import { reconcileOnce } from '../../workers/reconciler.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { isolatedPostgres } from '../support/databases.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  refs,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { environmentRows, eventually, setupCustomScenario, sleep } from '../support/sandbox-scenarios.ts';

const logger = createLogger({ level: 'silent' });
const EXT = 'extensions.agents.x-k8s.io/v1beta1';
/** A reconcile pass that must not sweep terminal leases uses this as the sweep period. */
const NO_SWEEP_MS = 3_600_000;

type ProviderName = 'simulated' | 'agent-sandbox';

/** One provider under test, with the levers the rows need to make their conditions happen. */
interface Subject {
  name: ProviderName;
  h: Harness;
  /** The provider the workers, the reconciler and the API use. */
  provider: SandboxProvider;
  networkPolicies?: NetworkPolicyVerifier;
  callTimeoutMs: number;
  /** Makes network policy generation 1 of a project verifiable (the table's is registered by setup). */
  allowPolicy(projectId: string): void;
  /** The next provision's create fails without effect, in a way that proves nothing (Unknown). */
  failNextCreate(): void;
  /** The next provision's create is applied, but its answer never arrives (Unknown). */
  loseNextCreateAnswer(): void;
  /** Deletes the operation's resource behind Sandlot's back. */
  deleteBehindBack(operationId: string, resourceId: string): Promise<void>;
  /** Gives the operation's Pod another UID under the same name (a reused name), where there are Pods. */
  replacePod(operationId: string): void;
  /** How many live resources the provider holds for the operation. */
  live(operationId: string): Promise<number>;
  /** How many resources the provider ever made for the operation (released ones included). */
  created(operationId: string): Promise<number>;
  /** Whatever of the operation is still stored at the provider (empty once released). */
  traces(operationId: string): Promise<string[]>;
  /** Resource IDs of every live resource carrying this owner hash, any fence, sorted. */
  liveResourceIds(ownerHash: string): Promise<string[]>;
  close(): Promise<void>;
}

async function simulatedSubject(): Promise<Subject> {
  const pg = await isolatedPostgres();
  const h = await buildHarness(pg.open(), { workers: false });
  const live = (operationId: string) => h.provider.countResources({ operationId });
  return {
    name: 'simulated',
    h,
    provider: h.provider,
    callTimeoutMs: 1_500,
    allowPolicy: () => undefined,
    failNextCreate: () => h.provider.injectFault('provision', 'server-error'),
    loseNextCreateAnswer: () => h.provider.injectFault('provision', 'timeout-after-apply'),
    replacePod: () => {
      throw new Error('the simulated provider has no Pods');
    },
    deleteBehindBack: async (_operationId, resourceId) => {
      await markSimulatedResourceDeleted(h.db, resourceId, Date.now());
    },
    live,
    created: (operationId) => h.provider.countResources({ operationId, includeDeleted: true }),
    traces: async (operationId) =>
      (await listSimulatedResources(h.db, { operationId })).map((r) => r.resourceId),
    liveResourceIds: async (ownerHash) =>
      (await listSimulatedResources(h.db, { ownerHash })).map((r) => r.resourceId).sort(),
    close: async () => {
      await h.close();
      await pg.drop();
    },
  };
}

async function agentSandboxSubject(): Promise<Subject> {
  const fake: FakeKubeApi = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
  fake.objects.put(runtimeClassObject());
  const pg = await isolatedPostgres();
  const provider = withWorkspaces(fake, adapterOn(fake));
  const networkPolicies = verifierOn(fake);
  const h = await buildHarness(pg.open(), { workers: false, sandboxProvider: provider, networkPolicies });
  const claimsWith = (label: string, value: string) =>
    fake.objects
      .list({ apiVersion: EXT, kind: 'SandboxClaim' }, { namespace: NAMESPACE })
      .filter((claim) => claim.metadata.labels?.[label] === value);
  return {
    name: 'agent-sandbox',
    h,
    provider,
    networkPolicies,
    callTimeoutMs: 10_000,
    allowPolicy: (projectId) =>
      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId, generation: 1 })),
    // A 500 on the claim's create: nothing applied, but a 5xx proves nothing to the adapter.
    failNextCreate: () => fake.faults.failNext({ verb: 'create', resource: 'sandboxclaims' }, 500),
    // The claim is created, then the socket is destroyed unanswered.
    loseNextCreateAnswer: () =>
      fake.faults.dropResponseAfterApply({ verb: 'create', resource: 'sandboxclaims' }),
    replacePod: (operationId) => {
      fake.objects.mutate(refs.pod(objectNames(operationId).claim), (pod) => {
        pod.metadata.uid = randomUUID();
      });
    },
    deleteBehindBack: (operationId) => {
      // The claim, its Sandbox and its Pod vanish (as a cluster operator's delete would leave it).
      const { claim } = objectNames(operationId);
      for (const ref of [refs.claim(claim), refs.sandbox(claim), refs.pod(claim)]) fake.objects.remove(ref);
      return Promise.resolve();
    },
    live: (operationId) => Promise.resolve(claimsWith(LABELS.operationId, operationId).length),
    // Every create of the operation's claim the API server applied (a dropped answer included).
    created: (operationId) =>
      Promise.resolve(
        fake.requests.filter(
          (r) =>
            r.verb === 'create' &&
            r.resource === 'sandboxclaims' &&
            (r.status === 201 || r.status === 0) &&
            (r.body as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels?.[
              LABELS.operationId
            ] === operationId,
        ).length,
      ),
    // The operation's objects by their exact names: template, pool, claim, Sandbox, Pod.
    traces: (operationId) => {
      const names = objectNames(operationId);
      const candidates = [
        refs.template(names.template),
        refs.pool(names.pool),
        refs.claim(names.claim),
        refs.sandbox(names.claim),
        refs.pod(names.claim),
      ];
      return Promise.resolve(
        candidates.filter((ref) => fake.objects.get(ref) !== undefined).map((ref) => ref.kind),
      );
    },
    liveResourceIds: (ownerHash) =>
      Promise.resolve(
        claimsWith(LABELS.ownerHash, ownerHash)
          .map((claim) => resourceIdOf(claim.metadata.name, claim.metadata.uid ?? ''))
          .sort(),
      ),
    close: async () => {
      await h.close();
      await pg.drop();
      await fake.close();
    },
  };
}

interface LeaseBody {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  state: string;
  resourceId: string | null;
  failure: { code: string; message: string } | null;
}

interface CleanupBody {
  cleanupId: string;
  state: string;
  foundBy: string;
  resourceId: string;
  source: { operationId: string; resourceGeneration: number; providerFence: number };
  receipt: Record<string, unknown> | null;
}

/** What a row runs against: one provider, one Environment of its own, workers started for it. */
interface RowContext {
  subject: Subject;
  s: Scenario;
  /**
   * Starts the workers (effects only: reconcile passes are the row's to drive), with another
   * network policy verifier at dispatch when given.
   */
  startWorkers(options?: { networkPolicies?: NetworkPolicyVerifier }): Promise<void>;
}

/** One reconciliation pass, as the reconciler on a schedule would run it. */
function reconcile(t: RowContext, lateSweepMs = NO_SWEEP_MS) {
  const { subject } = t;
  const deps = runnerDeps(
    {
      db: subject.h.db,
      runtime: subject.h.runtime,
      provider: subject.provider,
      logger,
      ...(subject.networkPolicies === undefined ? {} : { networkPolicies: subject.networkPolicies }),
    },
    subject.callTimeoutMs,
  );
  return reconcileOnce({ ...deps, logger, lateSweepMs });
}

/** Reconcile passes (with sweeps due after `lateSweepMs`) until `probe` answers, or fail. */
async function reconcileUntil<T>(
  t: RowContext,
  what: string,
  probe: () => Promise<T | undefined>,
  lateSweepMs: number,
  timeoutMs = 30_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    await reconcile(t, lateSweepMs);
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
}

async function provision(t: RowContext, key = 'prov-1'): Promise<LeaseBody> {
  const res = await t.subject.h.request('POST', `${t.s.base}/sandbox/provision`, {
    token: t.s.token,
    body: provisionBody(t.s, key),
  });
  expect(res.status).toBe(202);
  return json<LeaseBody>(res);
}

async function leaseOf(t: RowContext): Promise<LeaseBody> {
  const res = await t.subject.h.request('GET', `${t.s.base}/sandbox`, { token: t.s.token });
  expect(res.status).toBe(200);
  return (await json<{ lease: LeaseBody }>(res)).lease;
}

const waitLease = async (t: RowContext, predicate: (l: LeaseBody) => boolean, timeoutMs = 10_000) =>
  (await waitForLease(
    t.subject.h,
    t.s,
    (l) => predicate(l as unknown as LeaseBody),
    timeoutMs,
  )) as unknown as LeaseBody;

async function cleanups(t: RowContext): Promise<CleanupBody[]> {
  const res = await t.subject.h.request('GET', `${t.s.base}/sandbox/v1/late-resource-cleanups`, {
    token: t.s.token,
  });
  expect(res.status).toBe(200);
  return (await json<{ cleanups: CleanupBody[] }>(res)).cleanups;
}

/** The operation's attempts as [kind, state], without describes (read-only observations). */
async function attemptsOf(t: RowContext, operationId: string) {
  const attempts = await readAttemptsOfOperation(t.subject.h.db, operationId);
  return attempts.filter((a) => a.kind !== 'describe');
}
const kindsAndStates = async (t: RowContext, operationId: string) =>
  (await attemptsOf(t, operationId)).map((a) => [a.kind, a.state]);

async function abandon(t: RowContext, lease: LeaseBody): Promise<void> {
  const res = await t.subject.h.request('POST', `${t.s.base}/sandbox/abandon`, {
    token: t.s.token,
    body: {
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      idempotencyKey: `abandon-${lease.resourceGeneration}`,
    },
  });
  expect(res.status).toBe(202);
  await waitLease(t, (l) => l.operationId === lease.operationId && l.state === 'Released');
}

async function releaseEnvironment(t: RowContext) {
  return t.subject.h.request('POST', `${t.s.base}/release`, {
    token: t.s.token,
    body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-env' },
  });
}

/** The lease's owner binding, as its attempts carry it (first lifecycle, resource generation 1). */
async function ownerOfLease(t: RowContext, operationId: string): Promise<OwnerBinding> {
  const [first] = await readAttemptsOfOperation(t.subject.h.db, operationId);
  if (first === undefined) throw new Error(`no attempt of ${operationId}`);
  return {
    tenantId: first.tenantId,
    projectId: first.projectId,
    runId: first.runId,
    environmentId: first.environmentId,
    ownerHash: String(first.request['ownerHash']),
    lifecycleGeneration: first.lifecycleGeneration,
    resourceGeneration: first.resourceGeneration,
    providerFence: first.providerFence,
    operationId,
  };
}

/** Creates a resource through the provider's own API under `owner` (not through Sandlot). */
function createThroughProvider(t: RowContext, owner: OwnerBinding): Promise<ProviderResource> {
  const { workspace } = provisionBody(t.s);
  return t.subject.provider.provision(
    {
      owner,
      workspace,
      networkPolicyGeneration: 1,
      options: t.subject.provider.optionsSnapshot(),
    },
    { signal: AbortSignal.timeout(15_000), deadline: new Date(Date.now() + 15_000) },
  );
}

interface Row {
  row: number;
  condition: string;
  action: string;
  /** Whether the provider can make the condition happen (a row that cannot says why beside this). */
  appliesTo(provider: ProviderName): boolean;
  run(t: RowContext): Promise<void>;
}

const everywhere = () => true;

const rows: Row[] = [
  {
    row: 1,
    condition: 'run says ALLOCATING, no claim exists',
    action: "create the claim using the run's idempotency identity",
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      subject.failNextCreate();
      await t.startWorkers();
      const { operationId } = await provision(t);
      const stuck = await waitLease(t, (l) => l.state === 'ReconciliationRequired');
      // Observed: the provision's outcome is Unknown and nothing exists.
      expect(stuck).toMatchObject({ operationId, resourceId: null });
      expect(await kindsAndStates(t, operationId)).toEqual([['provision', 'Unknown']]);
      expect(await subject.live(operationId)).toBe(0);

      await reconcile(t);
      const active = await waitLease(t, (l) => l.state === 'Active');

      // The exact list found nothing, so the provision was retried under the same operation.
      expect(active).toMatchObject({ operationId, resourceGeneration: 1, providerFence: 1 });
      const attempts = await attemptsOf(t, operationId);
      expect(attempts.map((a) => [a.kind, a.state])).toEqual([
        ['provision', 'Succeeded'],
        ['listOwned', 'Succeeded'],
        ['provision', 'Succeeded'],
      ]);
      expect(attempts[0]?.resolution).toContain('retry under the same operation');
      expect(await subject.live(operationId)).toBe(1);
      expect(await subject.created(operationId)).toBe(1);
      const owner = await ownerOfLease(t, operationId);
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([active.resourceId]);
      expect(await cleanups(t)).toEqual([]);
    },
  },
  {
    row: 2,
    condition: 'claim exists and is ready, run lacks the sandbox ID',
    action: 'verify and fill the mapping',
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      subject.loseNextCreateAnswer();
      await t.startWorkers();
      const { operationId } = await provision(t);
      const stuck = await waitLease(t, (l) => l.state === 'ReconciliationRequired');
      // Observed: the resource exists at the provider; the lease does not know it.
      expect(stuck).toMatchObject({ operationId, resourceId: null });
      expect(await subject.live(operationId)).toBe(1);

      await reconcile(t);
      const active = await waitLease(t, (l) => l.state === 'Active');

      const owner = await ownerOfLease(t, operationId);
      const [resourceId] = await subject.liveResourceIds(owner.ownerHash);
      expect(active).toMatchObject({ operationId, resourceGeneration: 1, resourceId });
      const attempts = await attemptsOf(t, operationId);
      expect(attempts.map((a) => [a.kind, a.state])).toEqual([
        ['provision', 'Succeeded'],
        ['listOwned', 'Succeeded'],
      ]);
      expect(attempts[0]?.resolution).toBe('found by exact listOwned');
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([active.resourceId]);
      expect(await subject.created(operationId)).toBe(1);
      expect(await cleanups(t)).toEqual([]);
    },
  },
  {
    row: 3,
    condition: 'run is terminal, sandbox still exists',
    action: 'request deletion',
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      await t.startWorkers();
      const lease = await provision(t);
      const { operationId } = lease;
      await waitLease(t, (l) => l.state === 'Active');
      await abandon(t, lease);
      const terminal = await leaseOf(t);
      // A create under the lease's owner and fence lands after the lease is terminal; no result says so.
      const owner = await ownerOfLease(t, operationId);
      const lateOperation = `${operationId}.late`;
      const late = await createThroughProvider(t, { ...owner, operationId: lateOperation });
      expect(await subject.live(lateOperation)).toBe(1);
      expect(await cleanups(t)).toEqual([]);

      // The reconciler sweeps the terminal lease (an exact owner listing) and releases what it finds.
      const released = await reconcileUntil(
        t,
        'the swept resource to be released',
        async () => {
          const [c] = await cleanups(t);
          return c?.state === 'Released' ? c : undefined;
        },
        1,
      );

      expect(released).toMatchObject({
        foundBy: 'owner-listing',
        resourceId: late.resourceId,
        source: { operationId: lateOperation, resourceGeneration: 1, providerFence: 1 },
        receipt: { outcome: 'KnownOwnedAbsent', resourceId: late.resourceId },
      });
      expect(await cleanups(t)).toHaveLength(1);
      expect(await subject.traces(lateOperation)).toEqual([]);
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([]);
      // The terminal lease is never changed for it.
      expect(await leaseOf(t)).toEqual(terminal);
      expect(
        (await attemptsOf(t, operationId)).some((a) => a.kind === 'sweep' && a.state === 'Succeeded'),
      ).toBe(true);
      const done = await releaseEnvironment(t);
      expect(done.status).toBe(200);
      expect(await json(done)).toMatchObject({ state: 'Released' });
    },
  },
  {
    row: 4,
    condition: 'sandbox disappeared while run says RUNNING',
    action: 'mark execution lost, apply retry policy',
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      await t.startWorkers();
      const { operationId } = await provision(t);
      const active = await waitLease(t, (l) => l.state === 'Active');
      await subject.deleteBehindBack(operationId, active.resourceId ?? '');
      // Observed: the provider holds nothing, while the lease still says Active.
      expect(await subject.live(operationId)).toBe(0);
      expect((await environmentRows(subject.h.db, t.s.environmentId)).leases).toMatchObject([
        { operationId, state: 'Active' },
      ]);

      // The next inspection's exact describe answers absent: the execution is lost.
      const inspected = await json<{ readyForDispatch: boolean }>(
        await subject.h.request('GET', `${t.s.base}/sandbox`, { token: t.s.token }),
      );
      expect(inspected.readyForDispatch).toBe(false);
      const lost = await waitLease(t, (l) => l.state === 'Released');

      expect(lost).toMatchObject({
        operationId,
        resourceGeneration: 1,
        failure: { code: 'sandbox-lost' },
      });
      expect(await kindsAndStates(t, operationId)).toEqual([
        ['provision', 'Succeeded'],
        ['release', 'Succeeded'],
      ]);
      expect(await subject.traces(operationId)).toEqual([]);
      expect(await cleanups(t)).toEqual([]);
      // Retry policy: the Environment stays Registered, and a new provision makes generation 2.
      const lifecycle = await json<{ state: string }>(
        await subject.h.request('GET', `${t.s.base}/lifecycle`, { token: t.s.token }),
      );
      expect(lifecycle.state).toBe('Registered');
      const again = await provision(t, 'prov-2');
      expect(again).toMatchObject({ resourceGeneration: 2, state: 'Provisioning' });
      const second = await waitLease(t, (l) => l.state === 'Active' && l.resourceGeneration === 2);
      const owner = await ownerOfLease(t, operationId);
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([second.resourceId]);
    },
  },
  {
    row: 5,
    condition: 'claim exists with no application run',
    action: 'quarantine, then delete after checking the creation audit',
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      await t.startWorkers();
      const first = await provision(t);
      const { operationId } = first;
      const active = await waitLease(t, (l) => l.state === 'Active');
      const owner = await ownerOfLease(t, operationId);
      expect(active.resourceId).not.toBeNull();

      // The lease ends; its release finds and releases everything under its owner hash and fence.
      await abandon(t, first);
      expect(await subject.traces(operationId)).toEqual([]);
      // Observed afterwards: a resource of an operation no lease has, under the terminal lease's
      // owner hash and fence (a stray present at the release is released by it: see
      // sandbox-late-resources.test.ts).
      const strayOperation = `${operationId}.orphan`;
      await createThroughProvider(t, { ...owner, operationId: strayOperation });
      expect(await subject.live(strayOperation)).toBe(1);
      // The Environment carries on with a new lease (generation 2, fence 2): nothing the sweep may touch.
      await provision(t, 'prov-2');
      const second = await waitLease(t, (l) => l.state === 'Active' && l.resourceGeneration === 2);
      expect(second.providerFence).toBe(2);
      const terminalBefore = (await environmentRows(subject.h.db, t.s.environmentId)).leases[0];
      expect(await cleanups(t)).toEqual([]);

      const released = await reconcileUntil(
        t,
        'the stray to be released',
        async () => {
          const [c] = await cleanups(t);
          return c?.state === 'Released' ? c : undefined;
        },
        1,
      );

      expect(released).toMatchObject({
        foundBy: 'owner-listing',
        source: { operationId: strayOperation, resourceGeneration: 1, providerFence: 1 },
        receipt: { outcome: 'KnownOwnedAbsent' },
      });
      expect(await cleanups(t)).toHaveLength(1);
      expect(await subject.traces(strayOperation)).toEqual([]);
      // Nothing else touched: the terminal lease row, and the current lease with its resource.
      expect((await environmentRows(subject.h.db, t.s.environmentId)).leases[0]).toEqual(terminalBefore);
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([second.resourceId]);
      expect(await leaseOf(t)).toMatchObject({
        operationId: second.operationId,
        state: 'Active',
        resourceId: second.resourceId,
      });
    },
  },
  {
    row: 6,
    condition: 'an Unknown attempt whose create lands after an empty list',
    action: 'retry under the same operation; never an unrecorded live resource',
    // The fake Kubernetes API has no fault that applies a create after its call has answered (its
    // faults refuse, drop the answer of an applied change, or delay answers), so this row is
    // simulated-only.
    appliesTo: (provider) => provider === 'simulated',
    async run(t) {
      const { subject } = t;
      const LAND_MS = 800;
      subject.h.provider.injectFault('provision', 'late-resource', LAND_MS);
      const armedAt = Date.now();
      await t.startWorkers();
      const { operationId } = await provision(t);
      await waitLease(t, (l) => l.state === 'ReconciliationRequired');
      expect(await subject.live(operationId)).toBe(0);

      // The exact list runs before the create lands: it finds nothing, and the provision is retried.
      await reconcile(t);
      const active = await waitLease(t, (l) => l.state === 'Active');
      await sleep(Math.max(0, armedAt + LAND_MS + 200 - Date.now()));

      expect(await kindsAndStates(t, operationId)).toEqual([
        ['provision', 'Succeeded'],
        ['listOwned', 'Succeeded'],
        ['provision', 'Succeeded'],
      ]);
      expect(await subject.live(operationId)).toBe(1);
      expect(await subject.created(operationId)).toBe(1);
      const owner = await ownerOfLease(t, operationId);
      // Every live resource of ours is the lease's own (or would carry a cleanup record).
      const recorded = (await cleanups(t)).filter((c) => c.state !== 'Released').map((c) => c.resourceId);
      expect(await subject.liveResourceIds(owner.ownerHash)).toEqual([active.resourceId, ...recorded].sort());
      expect(await leaseOf(t)).toMatchObject({ operationId, state: 'Active', resourceId: active.resourceId });
    },
  },
  {
    row: 7,
    condition: 'the Pod answering has another UID than the one the lease mapped',
    action: 'stop traffic: never ready (a name was reused or status is stale)',
    // Only Kubernetes has Pods; the simulated provider's placement names none.
    appliesTo: (provider) => provider === 'agent-sandbox',
    async run(t) {
      const { subject } = t;
      await t.startWorkers();
      const { operationId } = await provision(t);
      await waitLease(t, (l) => l.state === 'Active');
      const inspect = async () =>
        json<{
          readyForDispatch: boolean;
          observation: { podUid?: string; error: { code: string } | null } | null;
          lease: { placement: Record<string, string> | null };
        }>(
          await subject.h.request('GET', `${t.s.base}/sandbox?networkPolicyGeneration=1`, {
            token: t.s.token,
          }),
        );
      // An exact observation maps the Pod that answers.
      const mapped = await eventually('the Pod to be mapped and ready', async () => {
        const seen = await inspect();
        return seen.readyForDispatch && seen.lease.placement?.['podUid'] !== undefined ? seen : undefined;
      });
      const podUid = mapped.lease.placement?.['podUid'];
      expect(mapped.observation?.podUid).toBe(podUid);

      subject.replacePod(operationId);
      const replaced = await inspect();
      expect(replaced.readyForDispatch).toBe(false);
      expect(replaced.observation?.error).toMatchObject({ code: 'pod-replaced' });
      expect(replaced.observation?.podUid).not.toBe(podUid);
      // The mapping keeps the Pod it recorded; the lease stays Active and nothing is released.
      expect(replaced.lease.placement?.['podUid']).toBe(podUid);
      expect(await leaseOf(t)).toMatchObject({ operationId, state: 'Active' });
      expect(await subject.live(operationId)).toBe(1);
    },
  },
  {
    row: 8,
    condition: 'a release finds nothing while a timed-out create may still land',
    action: 'release what was found; the create stays Unknown and blocks release until its resource is found',
    // The fake Kubernetes API has no fault that applies a create after its call answered (row 6).
    appliesTo: (provider) => provider === 'simulated',
    async run(t) {
      const { subject } = t;
      subject.h.provider.injectFault('provision', 'late-resource', 2_500);
      await t.startWorkers();
      const lease = await provision(t);
      const { operationId } = lease;
      await waitLease(t, (l) => l.state === 'ReconciliationRequired');
      const abandoned = await t.subject.h.request('POST', `${t.s.base}/sandbox/abandon`, {
        token: t.s.token,
        body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
      });
      expect(abandoned.status).toBe(202);
      // The release's exact lookup ran before the create landed: it settles nothing.
      const waiting = await waitLease(t, (l) => l.state === 'ReconciliationRequired' && l.failure !== null);
      expect(waiting.failure).toMatchObject({ code: 'release-unsettled' });
      expect((await releaseEnvironment(t)).status).toBe(409);
      expect((await attemptsOf(t, operationId)).find((a) => a.kind === 'provision')?.state).toBe('Unknown');

      await eventually('the late create to land', async () =>
        (await subject.live(operationId)) === 1 ? true : undefined,
      );
      await reconcileUntil(
        t,
        'the landed create to be found and released',
        async () => {
          const l = await leaseOf(t);
          return l.state === 'Released' ? l : undefined;
        },
        NO_SWEEP_MS,
      );
      expect(await subject.live(operationId)).toBe(0);
      expect(await cleanups(t)).toEqual([]);
      expect((await releaseEnvironment(t)).status).toBe(200);
    },
  },
  {
    row: 9,
    condition: 'a provision retry is refused before any call after an Unknown create',
    action:
      'the refusal settles only itself: the earlier call stays Unknown, the lease waits with its Workspace',
    appliesTo: everywhere,
    async run(t) {
      const { subject } = t;
      subject.failNextCreate();
      // Generation 1 is in force for the first call, and no longer by the retry.
      let inForce = true;
      const refusing: NetworkPolicyVerifier = {
        verify: () =>
          Promise.resolve(
            inForce ? { verified: true } : { verified: false, reason: 'generation 1 is no longer in force' },
          ),
      };
      await t.startWorkers({ networkPolicies: refusing });
      const { operationId } = await provision(t);
      await waitLease(t, (l) => l.state === 'ReconciliationRequired');
      inForce = false;
      await reconcile(t);
      await waitLease(
        t,
        (l) => l.state === 'ReconciliationRequired' && l.failure?.code === 'network-policy-unverified',
      );
      expect(await kindsAndStates(t, operationId)).toEqual([
        ['provision', 'Unknown'],
        ['listOwned', 'Succeeded'],
        ['provision', 'Failed'],
      ]);
      // No second lease can take the Workspace, and the Environment cannot be released.
      const second = await t.subject.h.request('POST', `${t.s.base}/sandbox/provision`, {
        token: t.s.token,
        body: provisionBody(t.s, 'prov-2'),
      });
      expect(second.status).toBe(409);
      expect((await releaseEnvironment(t)).status).toBe(409);
      expect(await subject.live(operationId)).toBe(0);
    },
  },
];

const providers: { name: ProviderName; skip: boolean; open: () => Promise<Subject> }[] = [
  { name: 'simulated', skip: false, open: simulatedSubject },
  { name: 'agent-sandbox', skip: skipWithoutCrds, open: agentSandboxSubject },
];

describe.each(providers)('reconciliation table on the $name provider', ({ name, skip, open }) => {
  describe.skipIf(skip)('observed condition → reconciliation action', () => {
    let subject: Subject;
    let workers: WorkerHost | undefined;

    beforeAll(async () => {
      subject = await open();
    });
    afterEach(async () => {
      await workers?.close();
      workers = undefined;
    });
    afterAll(async () => {
      await subject?.close();
    });

    const table = rows
      .filter((r) => r.appliesTo(name))
      .map((r) => [`row ${r.row}: ${r.condition} → ${r.action}`, r] as const);
    it.each(table)(
      '%s',
      async (_title, row) => {
        // An Environment of its own per row, so rows never see each other's leases or records.
        const project = `${name}-row-${row.row}`;
        const s = await setupCustomScenario(subject.h, { project, run: `run-${row.row}` });
        subject.allowPolicy(project);
        await row.run({
          subject,
          s,
          startWorkers: async (options = {}) => {
            const networkPolicies = options.networkPolicies ?? subject.networkPolicies;
            workers = await startWorkers(
              {
                db: subject.h.db,
                runtime: subject.h.runtime,
                provider: subject.provider,
                logger,
                ...(networkPolicies === undefined ? {} : { networkPolicies }),
              },
              {
                callTimeoutMs: subject.callTimeoutMs,
                // Reconcile passes are the rows' to drive; the observer would add describes.
                reconcileEveryMs: 600_000,
                observeEveryMs: 600_000,
                relayPollMs: 50,
                republishAfterMs: 500,
              },
            );
          },
        });
      },
      40_000,
    );
  });
});
