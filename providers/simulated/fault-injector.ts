// Decides, call by call, which fault the simulated provider suffers. Reproducible: the same plan and
// seed give the same decisions for the same sequence of calls, because every call draws the same
// number of random values whatever happens, so one outcome never shifts the draws of the next.
import type { FaultKind, FaultPlan, ProviderOperation } from './fault-plan.ts';
import { provisionOnlyFaults } from './fault-plan.ts';

export type InjectedFault = Exclude<FaultKind, 'latency'>;

export interface FaultDecision {
  operation: ProviderOperation;
  /** 1-based count of calls of this operation, this one included. */
  call: number;
  latencyMs: number;
  fault: InjectedFault | null;
  /** How long a late resource takes to appear. */
  lateMs: number;
}

export const DEFAULT_LATE_MS = 200;

const rateOrder = [
  ['timeoutAfterApply', 'timeout-after-apply'],
  ['serverError', 'server-error'],
  ['lostResponse', 'lost-response'],
  ['duplicateResource', 'duplicate-resource'],
  ['lateResource', 'late-resource'],
] as const;

/** mulberry32: tiny, fast and good enough to spread faults; not for anything secret. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultInjector {
  private readonly random: () => number;
  private readonly calls = new Map<ProviderOperation, number>();
  private readonly oneShots = new Map<ProviderOperation, { fault: InjectedFault; ms?: number }[]>();
  private injectedLateMs = 0;

  constructor(
    private readonly plan: FaultPlan = {},
    seed = 1,
  ) {
    this.random = mulberry32(seed);
  }

  /** The next call of `operation` suffers `fault`, ahead of the script and the rates. */
  inject(operation: ProviderOperation, fault: InjectedFault, ms?: number): void {
    const queue = this.oneShots.get(operation) ?? [];
    if (fault === 'late-resource') this.injectedLateMs = Math.max(this.injectedLateMs, ms ?? 0);
    queue.push(ms === undefined ? { fault } : { fault, ms });
    this.oneShots.set(operation, queue);
  }

  /**
   * The longest a late resource of this plan can take to appear after its call: the default, every
   * scripted late-resource delay, and every one injected into this injector.
   */
  maxLateMs(): number {
    const scripted = (this.plan.script ?? [])
      .filter((entry) => entry.fault === 'late-resource')
      .map((entry) => entry.ms ?? DEFAULT_LATE_MS);
    return Math.max(DEFAULT_LATE_MS, this.injectedLateMs, ...scripted);
  }

  next(operation: ProviderOperation): FaultDecision {
    const call = (this.calls.get(operation) ?? 0) + 1;
    this.calls.set(operation, call);
    const latencyDraw = this.random();
    const rateDraws = rateOrder.map(() => this.random());

    const range = this.plan.latencyMs;
    let latencyMs =
      range === undefined ? 0 : range.min + Math.floor(latencyDraw * (range.max - range.min + 1));
    let fault: InjectedFault | null = null;
    let lateMs = DEFAULT_LATE_MS;

    for (const entry of this.plan.script ?? []) {
      if (entry.operation !== operation || (entry.call !== undefined && entry.call !== call)) continue;
      if (entry.fault === 'latency') latencyMs += entry.ms ?? 0;
      else if (fault === null) {
        fault = entry.fault;
        lateMs = entry.ms ?? lateMs;
      }
    }

    const oneShot = this.oneShots.get(operation)?.shift();
    if (oneShot !== undefined) {
      fault = oneShot.fault;
      lateMs = oneShot.ms ?? DEFAULT_LATE_MS;
    }

    for (const [index, [key, kind]] of rateOrder.entries()) {
      if (fault !== null) break;
      if (operation !== 'provision' && provisionOnlyFaults.has(kind)) continue;
      if ((rateDraws[index] ?? 1) < (this.plan.rates?.[key] ?? 0)) fault = kind;
    }
    return { operation, call, latencyMs, fault, lateMs };
  }
}
