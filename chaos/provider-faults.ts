// The simulated provider's fault plan in every Sandlot process of a chaos run (the seed differs per
// process and incarnation). Rates apply to every call, describes and listings included; the script
// adds latency spikes, one of them past the call deadline. Calls take 10-250 ms, so that a worker
// stalled by SIGSTOP is likely to hold calls in flight (whose results must then be fenced).
import type { FaultPlan } from '../providers/simulated/fault-plan.ts';

export function providerFaultPlan(): FaultPlan {
  return {
    latencyMs: { min: 10, max: 250 },
    rates: {
      serverError: 0.03,
      timeoutAfterApply: 0.015,
      lostResponse: 0.02,
      duplicateResource: 0.02,
      lateResource: 0.02,
    },
    script: [
      { operation: 'provision', call: 20, fault: 'latency', ms: 1_500 },
      { operation: 'provision', call: 60, fault: 'latency', ms: 4_000 },
      { operation: 'release', call: 30, fault: 'latency', ms: 1_500 },
      { operation: 'listOwned', call: 5, fault: 'latency', ms: 2_500 },
    ],
  };
}
