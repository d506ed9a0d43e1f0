// The transport that runs provider effects. A job only names an attempt; the processor reads the
// attempt row and its fences from PostgreSQL, so a duplicate or late delivery is harmless (delivery
// is at least once in every implementation).
import { InvalidAttemptIdError } from './errors.ts';

export interface EffectJob {
  attemptId: string;
  /**
   * The attempt's Environment, where the publisher knows it: saves the processor one lookup. Only
   * a hint: the processor checks it against the attempt row under the Environment's lock.
   */
  environmentId?: string;
  /** The W3C `traceparent` stored with the outbox row: the worker's spans continue that trace. */
  traceContext?: string;
}

/** Must honour `signal`: it aborts on shutdown and when another worker may have taken the job. */
export type EffectProcessor = (job: EffectJob, signal: AbortSignal) => Promise<void>;

export interface CloseOptions {
  /** How long running jobs get to finish before their signals abort (default 10 s). */
  timeoutMs?: number;
}

export interface EffectQueue {
  /** Resolves once the jobs are queued; an attempt already queued or running is not queued twice. */
  publish(jobs: readonly EffectJob[]): Promise<void>;
  /** Starts running jobs (published ones wait until then); call at most once. */
  start(processor: EffectProcessor): void;
  close(options?: CloseOptions): Promise<void>;
  /**
   * Why this queue cannot do its work right now (a Redis connection that is not ready, a closed
   * queue), for the worker's /readyz; empty when it can. Cheap: it reads state, it sends nothing.
   */
  unreadiness(): string[];
}

export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;
/** Processor attempts per publish, in both implementations. */
export const EFFECT_ATTEMPTS = 3;

/** The same rule in every implementation, so embedded mode rejects what production would. */
export function isValidAttemptId(attemptId: string): boolean {
  return attemptId !== '' && !attemptId.includes(':') && !/^\d+$/.test(attemptId);
}

export function assertAttemptId(attemptId: string): void {
  if (!isValidAttemptId(attemptId)) throw new InvalidAttemptIdError(attemptId);
}

/** One job per distinct attempt, in first-seen order. */
export function distinctJobs(jobs: readonly EffectJob[]): EffectJob[] {
  const seen = new Set<string>();
  const out: EffectJob[] = [];
  for (const job of jobs) {
    assertAttemptId(job.attemptId);
    if (seen.has(job.attemptId)) continue;
    seen.add(job.attemptId);
    out.push({
      attemptId: job.attemptId,
      ...(typeof job.environmentId === 'string' && job.environmentId !== ''
        ? { environmentId: job.environmentId }
        : {}),
      ...(typeof job.traceContext === 'string' && job.traceContext !== ''
        ? { traceContext: job.traceContext }
        : {}),
    });
  }
  return out;
}
