// What a chaos run saw as it went: counters (requests, retries that chaos explains) and findings
// (anything a correct system must not do, whatever chaos did to it). A finding is printed the moment
// it is recorded, so a long run shows trouble early; the report lists them all again.

export type FindingKind =
  | 'unexpected-5xx'
  | 'connection-error-from-live-api'
  | 'request-timeout'
  | 'crash'
  | 'unexpected-status'
  | 'lifecycle-stuck'
  | 'duplicate-answers-differ'
  | 'stale-fence-accepted'
  | 'stale-fence-changed-state'
  | 'not-recovered'
  | 'not-quiesced'
  | 'lost'
  | 'duplicated'
  | 'released-while-live'
  | 'volume-double-mounted'
  | 'audit';

export interface Finding {
  kind: FindingKind;
  /** Milliseconds since the run started. */
  atMs: number;
  detail: string;
  environmentId?: string;
}

export class Recorder {
  readonly startedAt = Date.now();
  readonly findings: Finding[] = [];
  readonly counters = new Map<string, number>();

  constructor(private readonly print: (line: string) => void) {}

  elapsed(at = Date.now()): number {
    return at - this.startedAt;
  }

  count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  get(name: string): number {
    return this.counters.get(name) ?? 0;
  }

  find(kind: FindingKind, detail: string, environmentId?: string): void {
    const finding: Finding = {
      kind,
      atMs: this.elapsed(),
      detail,
      ...(environmentId === undefined ? {} : { environmentId }),
    };
    this.findings.push(finding);
    this.print(`FINDING ${kind}${environmentId === undefined ? '' : ` ${environmentId}`}: ${detail}`);
  }

  line(text: string): void {
    this.print(text);
  }

  counterObject(): Record<string, number> {
    return Object.fromEntries([...this.counters].sort(([a], [b]) => a.localeCompare(b)));
  }
}
