// Runs one provider attempt: begin (Pending → Dispatched under the lease's fences), call the
// provider with a deadline and the job's AbortSignal, complete (exact result + machine event in one
// commit). Failures become outcomes, never exceptions through the actor: only a definitive refusal
// is Failed; anything uncertain is Unknown and goes to reconciliation.
import type { Logger } from 'pino';
import { beginAttempt, completeAttempt, type AttemptDeps, type AttemptOutcome } from '../actors/attempts.ts';
import type { ResourceSummary } from '../machines/environment-events.ts';
import { classifyProviderFailure } from '../providers/errors.ts';
import type {
  CallOptions,
  OwnerBinding,
  ProviderResource,
  SandboxProvider,
  WorkspaceMount,
} from '../providers/provider.ts';
import type { AttemptRow } from '../store/attempts.ts';
import type { EffectJob, EffectProcessor } from './effect-queue.ts';

export interface EffectProcessorDeps extends AttemptDeps {
  provider: SandboxProvider;
  logger: Logger;
  /** Deadline of one provider call; past it the attempt is Unknown. */
  callTimeoutMs: number;
}

interface AttemptRequest {
  ownerHash: string;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  providerOptions: Record<string, unknown>;
  resourceId: string | null;
  releaseIdempotencyKey: string | null;
}

export function ownerOf(attempt: AttemptRow): OwnerBinding {
  const request = attempt.request as unknown as AttemptRequest;
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
  provider: SandboxProvider,
  attempt: AttemptRow,
  options: CallOptions,
): Promise<AttemptOutcome> {
  const request = attempt.request as unknown as AttemptRequest;
  const owner = ownerOf(attempt);
  const snapshot = request.providerOptions;
  switch (attempt.kind) {
    case 'provision': {
      const resource = await provider.provision(
        {
          owner,
          workspace: request.workspace,
          networkPolicyGeneration: request.networkPolicyGeneration,
          options: snapshot,
        },
        options,
      );
      return { state: 'Succeeded', resource: summaryOf(resource) };
    }
    case 'listOwned': {
      const resources = await provider.listOwned(
        { owner: { ownerHash: owner.ownerHash, providerFence: owner.providerFence }, options: snapshot },
        options,
      );
      return { state: 'Succeeded', resources: resources.map(summaryOf) };
    }
    case 'release': {
      // Release what the lease recorded plus anything an exact lookup finds for this operation,
      // so a resource created by a response we never saw is released too.
      const listed = await provider.listOwned(
        {
          owner: {
            ownerHash: owner.ownerHash,
            providerFence: owner.providerFence,
            operationId: owner.operationId,
          },
          options: snapshot,
        },
        options,
      );
      const ids = new Set(listed.map((r) => r.resourceId));
      if (request.resourceId !== null) ids.add(request.resourceId);
      const idempotencyKey = request.releaseIdempotencyKey ?? `${attempt.operationId}.release`;
      const receipts = [];
      for (const resourceId of ids) {
        receipts.push(
          await provider.release({ owner, resourceId, options: snapshot, idempotencyKey }, options),
        );
      }
      return {
        state: 'Succeeded',
        receipt: {
          outcome: 'KnownOwnedAbsent',
          idempotencyKey,
          resourceIds: receipts.map((r) => r.resourceId),
        },
      };
    }
    case 'describe':
      throw new Error('describe attempts run inline, never from the queue');
  }
}

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

export async function runAttempt(
  deps: EffectProcessorDeps,
  attemptId: string,
  signal: AbortSignal,
): Promise<void> {
  const begun = await beginAttempt(deps, attemptId, deps.callTimeoutMs);
  if (!begun.dispatch) {
    deps.logger.debug({ attemptId, reason: begun.reason }, 'attempt not dispatched');
    return;
  }
  const callSignal = AbortSignal.any([signal, AbortSignal.timeout(deps.callTimeoutMs)]);
  let outcome: AttemptOutcome;
  try {
    outcome = await call(deps.provider, begun.attempt, { signal: callSignal, deadline: begun.deadline });
  } catch (error) {
    outcome = failureOutcome(begun.attempt, error);
  }
  await completeAttempt(deps, attemptId, outcome);
  deps.logger.info({ attemptId, kind: begun.attempt.kind, state: outcome.state }, 'attempt resolved');
}

export function effectProcessor(deps: EffectProcessorDeps): EffectProcessor {
  return (job: EffectJob, signal: AbortSignal) => runAttempt(deps, job.attemptId, signal);
}
