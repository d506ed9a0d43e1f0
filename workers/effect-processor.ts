// The one attempt runner. Every provider call (provision, release, listOwned, describe) goes
// through `runAttempt`: begin (Pending → Dispatched under the Environment lock, gated by the lease
// state and every fence), call the provider with a deadline and an AbortSignal, complete (exact
// result + machine event in one commit). Failures become outcomes, never exceptions through the
// actor: only a definitive refusal is Failed; anything uncertain is Unknown and goes to
// reconciliation. Queue jobs, inspection and the observer all run attempts here.
import { contextFrom, inSpan, SpanKind } from '../lib/tracing.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { beginAttempt, completeAttempt, type AttemptDeps, type AttemptOutcome } from '../actors/attempts.ts';
import type { AttemptRunner, NetworkPolicyVerifier } from '../actors/ports.ts';
import { providerApplicability } from '../actors/sandbox/provider-applicability.ts';
import { attemptRequestSchema, type AttemptRequest } from '../machines/environment-effects.ts';
import type { ResourceSummary } from '../machines/environment-events.ts';
import { classifyProviderFailure } from '../providers/errors.ts';
import type { CallOptions, OwnerBinding, ProviderResource, SandboxProvider } from '../providers/provider.ts';
import { canonicalJson } from '../lib/canonical-json.ts';
import type { SandlotMetrics } from '../lib/metrics.ts';
import { mark, timelineNow } from '../lib/timeline.ts';
import { readAttempt, readAttemptsOfOperation, type AttemptRow } from '../store/attempts.ts';
import { readLeaseByOperation } from '../store/leases.ts';
import type { EffectJob, EffectProcessor } from './effect-queue.ts';
import { runBuildTestStep, type BuildTestWorkerDeps } from './build-test-step.ts';

export interface EffectProcessorDeps extends AttemptDeps {
  provider: SandboxProvider;
  /** Verifies a provision's network policy generation again right before the provider is called. */
  networkPolicies: NetworkPolicyVerifier;
  logger: Logger;
  /** Deadline of one provider call; past it the attempt is Unknown. */
  callTimeoutMs: number;
  /** Provider call latency and outcome; reconciler and observer counts (default: not counted). */
  metrics?: SandlotMetrics;
  /** BuildTest steps (absent: no AcceptedBuildTestProfile; such an attempt fails, recorded). */
  buildTest?: BuildTestWorkerDeps;
}

export function ownerOf(attempt: AttemptRow, request: AttemptRequest): OwnerBinding {
  return {
    tenantId: attempt.tenantId,
    projectId: attempt.projectId,
    runId: attempt.runId,
    environmentId: attempt.environmentId,
    ownerHash: request.ownerHash,
    lifecycleGeneration: attempt.lifecycleGeneration,
    resourceGeneration: attempt.resourceGeneration,
    providerFence: attempt.providerFence,
    operationId: attempt.operationId,
  };
}

export const summaryOf = (r: ProviderResource): ResourceSummary => ({
  resourceId: r.resourceId,
  operationId: r.owner.operationId,
  phase: r.phase,
  placement: { ...r.placement },
});

async function call(
  deps: EffectProcessorDeps,
  attempt: AttemptRow,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const { provider } = deps;
  // The request was written by the machine's own schema; parsing it again proves the row is whole.
  const request = attemptRequestSchema.parse(attempt.request);
  const owner = ownerOf(attempt, request);
  const snapshot = request.providerOptions;
  switch (attempt.kind) {
    case 'provision': {
      const resource = await provider.provision(
        {
          owner,
          workspace: request.workspace,
          networkPolicyGeneration: request.networkPolicyGeneration,
          options: snapshot,
          expiresAt: request.expiresAt ?? null,
        },
        options,
      );
      return { state: 'Succeeded', resource: summaryOf(resource) };
    }
    case 'renew': {
      if (request.resourceId === null || request.expiresAt == null) {
        return {
          state: 'Failed',
          error: { code: 'no-resource', message: 'the renewal names no resource or no expiry' },
        };
      }
      const receipt = await provider.renew(
        { owner, resourceId: request.resourceId, options: snapshot, expiresAt: request.expiresAt },
        options,
      );
      return { state: 'Succeeded', receipt: { ...receipt } };
    }
    case 'listOwned': {
      const resources = await provider.listOwned(
        { owner: { ownerHash: owner.ownerHash, providerFence: owner.providerFence }, options: snapshot },
        options,
      );
      return { state: 'Succeeded', resources: resources.map(summaryOf) };
    }
    case 'describe': {
      if (request.resourceId === null) {
        return { state: 'Failed', error: { code: 'no-resource', message: 'the lease records no resource' } };
      }
      const result = await provider.describe(
        { owner, resourceId: request.resourceId, options: snapshot },
        options,
      );
      return {
        state: 'Succeeded',
        observation: result.present
          ? {
              present: true,
              phase: result.resource.phase,
              finished: result.resource.finished?.reason ?? null,
              ...podOf(result.resource.placement),
            }
          : { present: false },
      };
    }
    case 'sweep': {
      // Everything the terminal lease's owner hash and fence still own, with the binding stamped on it.
      const resources = await provider.listOwned(
        { owner: { ownerHash: owner.ownerHash, providerFence: owner.providerFence }, options: snapshot },
        options,
      );
      return {
        state: 'Succeeded',
        found: resources.map((r) => ({
          resource: summaryOf(r),
          owner: {
            lifecycleGeneration: r.owner.lifecycleGeneration,
            resourceGeneration: r.owner.resourceGeneration,
            providerFence: r.owner.providerFence,
          },
        })),
      };
    }
    case 'buildTest':
      return runBuildTestStep(deps.buildTest, deps.db, request, owner, options);
    case 'cleanup': {
      // A late resource: released by its exact ID under the saved source binding and options.
      if (request.resourceId === null) {
        return { state: 'Failed', error: { code: 'no-resource', message: 'the cleanup names no resource' } };
      }
      const idempotencyKey = request.releaseIdempotencyKey ?? `${attempt.attemptId}.release`;
      const receipt = await provider.release(
        { owner, resourceId: request.resourceId, options: snapshot, idempotencyKey },
        options,
      );
      return { state: 'Succeeded', receipt: { ...receipt } };
    }
    case 'release': {
      // Release what the lease recorded plus anything an exact lookup under the lease's owner
      // hash and fence finds: a resource created by a response we never saw, and a stray the
      // provider made under another operation of the same fence (each released under the binding
      // stamped on it, so the owner check holds), before the lease may be Released. What the
      // lookup did not find settles an uncertain provision only with the provider's proof that it
      // is over.
      const listedAt = new Date();
      const listed = await provider.listOwned(
        { owner: { ownerHash: owner.ownerHash, providerFence: owner.providerFence }, options: snapshot },
        options,
      );
      const bindings = new Map(listed.map((r) => [r.resourceId, r.owner.operationId]));
      if (request.resourceId !== null && !bindings.has(request.resourceId))
        bindings.set(request.resourceId, owner.operationId);
      const idempotencyKey = request.releaseIdempotencyKey ?? `${attempt.operationId}.release`;
      const receipts = [];
      for (const [resourceId, operationId] of bindings) {
        const binding = { ...owner, operationId };
        receipts.push(
          await provider.release({ owner: binding, resourceId, options: snapshot, idempotencyKey }, options),
        );
      }
      const foundOwn = listed.some((r) => r.owner.operationId === owner.operationId);
      const settledCalls = foundOwn ? [] : await settledProvisions(deps, attempt, listedAt);
      return {
        state: 'Succeeded',
        receipt: {
          outcome: 'KnownOwnedAbsent',
          idempotencyKey,
          resourceIds: receipts.map((r) => r.resourceId),
          listedResourceIds: listed.map((r) => r.resourceId),
          settledCalls,
        },
        resources: listed.map(summaryOf),
        settledCalls,
      };
    }
  }
}

/**
 * The operation's uncertain provision calls (Dispatched or Unknown) that the provider proves can no
 * longer take effect as of a listing begun at `listedAt` (`SandboxProvider.callSettled`).
 */
async function settledProvisions(
  deps: EffectProcessorDeps,
  release: AttemptRow,
  listedAt: Date,
): Promise<string[]> {
  const settled: string[] = [];
  for (const a of await readAttemptsOfOperation(deps.db, release.operationId)) {
    if (a.kind !== 'provision' || a.resourceGeneration !== release.resourceGeneration) continue;
    if ((a.state !== 'Dispatched' && a.state !== 'Unknown') || a.deadlineAt === null) continue;
    const call = { operationId: a.operationId, deadline: new Date(a.deadlineAt) };
    if (await deps.provider.callSettled(call, listedAt)) settled.push(a.attemptId);
  }
  return settled;
}

/**
 * The Pod that answered, where the provider reports one (Kubernetes placement), with everything the
 * provider placed it by (IP, Service, DNS name: no credential), so the lease learns where its
 * AgentHost answers even when the provision's read-back saw the Pod still pending.
 */
const podOf = (placement: Readonly<Record<string, string>>) => {
  const podUid = placement['podUid'];
  return podUid === undefined || podUid === '' ? {} : { podUid, placement: { ...placement } };
};

function failureOutcome(attempt: AttemptRow, error: unknown): AttemptOutcome {
  const kind = classifyProviderFailure(error);
  const detail = {
    code:
      error instanceof Error && 'code' in error && typeof error.code === 'string'
        ? error.code
        : 'provider-error',
    message: error instanceof Error ? error.message : String(error),
  };
  // A foreign resource under our deterministic name proves our provision did nothing.
  const failed = kind === 'definitive' || (kind === 'ownership' && attempt.kind === 'provision');
  return { state: failed ? 'Failed' : 'Unknown', error: detail };
}

/**
 * The lease froze the provider it was admitted for (identity and options snapshot). A provision
 * (a retry after reconciliation included) is made only by that same provider: after an upgrade or
 * a configuration change it fails, recorded, without a call. Describe, listOwned and release always
 * run under the frozen snapshot the attempt carries, so a changed provider never strands a lease.
 */
async function providerRefusal(
  deps: EffectProcessorDeps,
  attempt: AttemptRow,
): Promise<AttemptOutcome | null> {
  if (attempt.kind !== 'provision') return null;
  const lease = await readLeaseByOperation(deps.db, attempt.operationId);
  if (lease === null) return null;
  const running = { identity: deps.provider.identity, options: deps.provider.optionsSnapshot() };
  const frozen = { identity: lease.providerIdentity, options: lease.providerOptions };
  if (canonicalJson(running) === canonicalJson(frozen)) return null;
  const describe = (i: Record<string, unknown>) =>
    `${String(i['providerId'])} ${String(i['adapterVersion'])} (options revision ${String(i['optionsRevision'])})`;
  return {
    state: 'Failed',
    error: {
      code: 'provider-changed',
      message: `the lease was admitted for ${describe(frozen.identity)} with its options snapshot; this process runs ${describe({ ...running.identity })}${
        canonicalJson(running.identity) === canonicalJson(frozen.identity) ? ' with other options' : ''
      }, so it does not provision for it (describe, list and release still work)`,
    },
  };
}

/**
 * A provision (and a BuildTest command or collector Pod start) goes out only under a network
 * policy generation verified now, not only when the lease was reserved: a retry after
 * reconciliation may come much later. Not verified: the attempt
 * fails without calling the provider (nothing was created). The verifier cannot answer: the
 * outcome is unknown to the lease (reconciliation retries it), never a call made unchecked.
 */
async function networkPolicyRefusal(
  deps: EffectProcessorDeps,
  attempt: AttemptRow,
): Promise<AttemptOutcome | null> {
  const request = attemptRequestSchema.parse(attempt.request);
  // A BuildTest command or collector Pod runs on the lease's Workspace under the lease's network
  // policy generation (its own Pods are offline): that binding is checked again before each start.
  const startsPod = attempt.kind === 'buildTest' && request.buildTest?.step !== 'cleanup';
  if (attempt.kind !== 'provision' && !startsPod) return null;
  // A provider without a guest network (no vm-isolation) has no policy to select its sandbox.
  if (!providerApplicability(deps.provider.identity).networkPolicy) return null;
  const { networkPolicyGeneration } = request;
  let verdict;
  try {
    verdict = await deps.networkPolicies.verify(attempt.tenantId, attempt.projectId, networkPolicyGeneration);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      state: 'Unknown',
      error: {
        code: 'network-policy-unavailable',
        message: `network policy generation ${networkPolicyGeneration} could not be verified before dispatch: ${message}`,
      },
    };
  }
  if (verdict.verified) return null;
  return {
    state: 'Failed',
    error: {
      code: 'network-policy-unverified',
      message: `network policy generation ${networkPolicyGeneration} is not verified at dispatch: ${verdict.reason}`,
    },
  };
}

/** The provider call itself, timed and counted by outcome; a throw becomes its outcome here. */
async function timedCall(
  deps: EffectProcessorDeps,
  attempt: AttemptRow,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const started = performance.now();
  let outcome: AttemptOutcome;
  try {
    outcome = await call(deps, attempt, options);
  } catch (error) {
    outcome = failureOutcome(attempt, error);
  }
  const seconds = (performance.now() - started) / 1000;
  deps.metrics?.providerCallSeconds.observe({ kind: attempt.kind, outcome: outcome.state }, seconds);
  return outcome;
}

/** What a span about an attempt carries (identifiers and fences only, never options). */
const attemptAttributes = (a: AttemptRow) => ({
  'sandlot.attempt_id': a.attemptId,
  'sandlot.kind': a.kind,
  'sandlot.environment_id': a.environmentId,
  'sandlot.operation_id': a.operationId,
});

/** What every log line about an attempt carries: its Environment, operation and fences. */
const attemptFields = (a: AttemptRow) => ({
  attemptId: a.attemptId,
  kind: a.kind,
  environmentId: a.environmentId,
  operationId: a.operationId,
  lifecycleGeneration: a.lifecycleGeneration,
  resourceGeneration: a.resourceGeneration,
  providerFence: a.providerFence,
  fencingGeneration: a.fencingGeneration,
});

/** Runs one attempt if it is still Pending; returns false when someone else had it (or it moved on). */
export async function runAttempt(
  deps: EffectProcessorDeps,
  attemptId: string,
  signal: AbortSignal,
  environmentId?: string,
): Promise<boolean> {
  const picked = timelineNow();
  const begun = await beginAttempt(deps, attemptId, deps.callTimeoutMs, environmentId);
  if (!begun.dispatch) {
    deps.logger.debug({ attemptId, reason: begun.reason }, 'attempt not dispatched');
    return false;
  }
  const env = begun.attempt.environmentId;
  const kind = begun.attempt.kind;
  mark(env, `${kind} attempt picked up`, picked);
  mark(env, `${kind} attempt dispatched`);
  const callSignal = AbortSignal.any([signal, AbortSignal.timeout(deps.callTimeoutMs)]);
  let outcome: AttemptOutcome;
  try {
    const refusal =
      (await providerRefusal(deps, begun.attempt)) ?? (await networkPolicyRefusal(deps, begun.attempt));
    mark(env, `${kind} checks done (provider, network policy)`);
    // A refusal made no call: it proves something about this attempt only (the machine keeps any
    // earlier uncertain call of the operation unresolved).
    outcome =
      refusal === null
        ? await inSpan(
            `provider ${kind}`,
            { kind: SpanKind.CLIENT, attributes: attemptAttributes(begun.attempt) },
            async (span) => {
              const answered = await timedCall(deps, begun.attempt, {
                signal: callSignal,
                deadline: begun.deadline,
              });
              span.setAttribute('sandlot.outcome', answered.state);
              return answered;
            },
          )
        : refusal.state === 'Failed'
          ? { ...refusal, madeNoCall: true }
          : refusal;
  } catch (error) {
    outcome = failureOutcome(begun.attempt, error);
  }
  mark(env, `${kind} provider answered`);
  await inSpan('commit result', { attributes: attemptAttributes(begun.attempt) }, () =>
    completeAttempt(deps, attemptId, outcome, env),
  );
  const level = begun.attempt.kind === 'describe' ? 'debug' : 'info';
  const error = outcome.state === 'Succeeded' ? {} : { code: outcome.error.code };
  deps.logger[level]({ ...attemptFields(begun.attempt), state: outcome.state, ...error }, 'attempt resolved');
  return true;
}

export function effectProcessor(deps: EffectProcessorDeps): EffectProcessor {
  return async (job: EffectJob, signal: AbortSignal) => {
    // The job continues the trace of the transition that wrote its outbox row.
    await inSpan(
      'effect job',
      {
        kind: SpanKind.CONSUMER,
        attributes: { 'sandlot.attempt_id': job.attemptId },
        parent: contextFrom(job.traceContext),
      },
      () => runAttempt(deps, job.attemptId, signal, job.environmentId),
    );
  };
}

const unresolvedBeforeCall = new Set(['Pending', 'Dispatched']);

/**
 * The runner as the actors see it: run a committed attempt now, in this process, and answer its
 * row. The attempt's outbox row was handed to the queue too; whoever begins it first runs it (the
 * Environment lock decides), and the other waits here for its result up to `timeoutMs`.
 */
export function attemptRunner(deps: EffectProcessorDeps, pollMs = 25): AttemptRunner {
  return {
    async runNow(attemptId, timeoutMs) {
      const until = Date.now() + timeoutMs;
      await runAttempt(
        { ...deps, callTimeoutMs: Math.min(deps.callTimeoutMs, timeoutMs) },
        attemptId,
        AbortSignal.timeout(timeoutMs),
      );
      for (;;) {
        const row = await readAttempt(deps.db, attemptId);
        if (row === null || !unresolvedBeforeCall.has(row.state) || Date.now() >= until) return row;
        await sleep(pollMs);
      }
    },
  };
}
