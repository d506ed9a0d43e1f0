// Injected faults for the Pod `exec` subresource. Each armed fault is consumed by the first exec
// session it matches, and that session gets at most one fault.

export type ExecFault =
  /** Answer the upgrade with this HTTP status (a 302 carries `location`) instead of 101. */
  | { kind: 'refuse-upgrade'; status: number; location?: string }
  /** The identity line reports these values instead of the Pod's UID and the handler's fingerprint. */
  | { kind: 'wrong-identity'; podUid?: string; requestFingerprint?: string }
  /** Deliver the first `bytes` stdin bytes to the handler, then destroy the socket unanswered. */
  | { kind: 'drop-after-stdin-bytes'; bytes: number }
  /** Run the handler, then answer a Failure status with this exit code whatever it returned. */
  | { kind: 'exit'; exitCode: number }
  /**
   * Hold the connection open and answer nothing more: from the start (`upgrade`), or once the
   * identity line is written (`identity`; the handler still reads stdin, its answer is withheld).
   */
  | { kind: 'stall'; after: 'upgrade' | 'identity' };

export interface ExecFaultMatch {
  namespace?: string;
  pod?: string;
  container?: string;
}

export interface FakeExecFaults {
  /** Arms `fault` for the next exec session matching `match` (every session when empty). */
  next(fault: ExecFault, match?: ExecFaultMatch): void;
  clear(): void;
}

interface Armed {
  fault: ExecFault;
  match: ExecFaultMatch;
}

export class ExecFaultPlan implements FakeExecFaults {
  private readonly armed: Armed[] = [];

  next(fault: ExecFault, match: ExecFaultMatch = {}): void {
    this.armed.push({ fault, match });
  }

  clear(): void {
    this.armed.length = 0;
  }

  take(facts: Required<ExecFaultMatch>): ExecFault | undefined {
    const index = this.armed.findIndex(
      ({ match }) =>
        (match.namespace === undefined || match.namespace === facts.namespace) &&
        (match.pod === undefined || match.pod === facts.pod) &&
        (match.container === undefined || match.container === facts.container),
    );
    if (index < 0) return undefined;
    return this.armed.splice(index, 1)[0]?.fault;
  }
}
