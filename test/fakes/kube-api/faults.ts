// Injected failures: latency, Status errors for matching requests, answers dropped after the change
// was applied, and failing lists. Each armed fault is consumed by the requests it fires on.
import type { Verb } from './types.ts';

export interface FaultMatch {
  verb?: Verb;
  /** Plural resource name, e.g. `sandboxclaims`. */
  resource?: string;
  name?: string;
  namespace?: string;
  /** `status` to target only the status subresource. */
  subresource?: string;
}

export interface FakeFaults {
  /** Delays every answer by `ms` (0 turns it off). */
  latency(ms: number): void;
  /** The next `times` (default 1) matching requests fail with `status` and are not applied. */
  failNext(match: FaultMatch, status: number, times?: number): void;
  /** The next `times` (default 1) matching requests are applied, then the socket is destroyed unanswered. */
  dropResponseAfterApply(match: FaultMatch, times?: number): void;
  /** The next `n` list calls for `resource` fail (default status 500). */
  listErrors(resource: string, n: number, status?: number): void;
  clear(): void;
}

export interface RequestFacts {
  verb: Verb;
  resource: string;
  name?: string;
  namespace?: string;
  subresource?: string;
}

interface Armed {
  match: FaultMatch;
  remaining: number;
  status: number;
}

function matches(match: FaultMatch, facts: RequestFacts): boolean {
  return (
    (match.verb === undefined || match.verb === facts.verb) &&
    (match.resource === undefined || match.resource === facts.resource) &&
    (match.name === undefined || match.name === facts.name) &&
    (match.namespace === undefined || match.namespace === facts.namespace) &&
    (match.subresource === undefined || match.subresource === facts.subresource)
  );
}

function take(list: Armed[], facts: RequestFacts): Armed | undefined {
  const found = list.find((a) => a.remaining > 0 && matches(a.match, facts));
  if (!found) return undefined;
  found.remaining -= 1;
  if (found.remaining === 0) list.splice(list.indexOf(found), 1);
  return found;
}

export class FaultPlan implements FakeFaults {
  delayMs = 0;
  private readonly failures: Armed[] = [];
  private readonly drops: Armed[] = [];

  latency(ms: number): void {
    this.delayMs = ms;
  }

  failNext(match: FaultMatch, status: number, times = 1): void {
    this.failures.push({ match, remaining: times, status });
  }

  dropResponseAfterApply(match: FaultMatch, times = 1): void {
    this.drops.push({ match, remaining: times, status: 0 });
  }

  listErrors(resource: string, n: number, status = 500): void {
    this.failNext({ verb: 'list', resource }, status, n);
  }

  clear(): void {
    this.delayMs = 0;
    this.failures.length = 0;
    this.drops.length = 0;
  }

  /** The status to fail this request with, if a failure is armed for it. */
  takeFailure(facts: RequestFacts): number | undefined {
    return take(this.failures, facts)?.status;
  }

  takeDrop(facts: RequestFacts): boolean {
    return take(this.drops, facts) !== undefined;
  }
}
