import { describe, expect, it } from 'vitest';
import { FaultInjector } from './fault-injector.ts';
import { FaultPlanError, parseFaultPlan, providerOperations, type FaultPlan } from './fault-plan.ts';

describe('parseFaultPlan', () => {
  it('accepts a plan with latency, rates and a script', () => {
    const plan = parseFaultPlan(
      JSON.stringify({
        latencyMs: { min: 1, max: 5 },
        rates: { serverError: 0.1, lostResponse: 0 },
        script: [
          { operation: 'provision', call: 2, fault: 'late-resource', ms: 300 },
          { operation: 'release', fault: 'latency', ms: 10 },
        ],
      }),
    );
    expect(plan.rates?.serverError).toBe(0.1);
    expect(plan.script).toHaveLength(2);
  });

  it.each([
    ['malformed JSON', '{"rates":', /not valid JSON/],
    ['a rate above 1', '{"rates":{"serverError":1.5}}', /rates\.serverError: .*<=1/],
    ['a misspelt key', '{"rate":{"serverError":0.1}}', /Unrecognized key.*"rate"/],
    ['an unknown fault', '{"script":[{"operation":"provision","fault":"explode"}]}', /script\.0\.fault: /],
    [
      'a provision-only fault on describe',
      '{"script":[{"operation":"describe","fault":"duplicate-resource"}]}',
      /script\.0\.fault: duplicate-resource only applies to provision, not describe/,
    ],
    [
      'latency without ms',
      '{"script":[{"operation":"release","fault":"latency"}]}',
      /script\.0\.ms: .*needs ms/,
    ],
    ['call 0', '{"script":[{"operation":"release","call":0,"fault":"server-error"}]}', /script\.0\.call: /],
    ['min above max', '{"latencyMs":{"min":9,"max":3}}', /latencyMs: min must not exceed max/],
    ['not an object', '[]', /\(plan\): /],
  ])('rejects %s with a message naming the problem', (_case, json, message) => {
    expect(() => parseFaultPlan(json)).toThrow(FaultPlanError);
    expect(() => parseFaultPlan(json)).toThrow(message);
  });
});

describe('FaultInjector', () => {
  const plan: FaultPlan = {
    latencyMs: { min: 0, max: 40 },
    rates: { serverError: 0.2, lostResponse: 0.2, duplicateResource: 0.2, lateResource: 0.2 },
  };
  const run = (seed: number) => {
    const injector = new FaultInjector(plan, seed);
    return Array.from({ length: 200 }, (_, i) => injector.next(providerOperations[i % 4] ?? 'provision'));
  };

  it('the same seed gives the same sequence of faults and latencies', () => {
    expect(run(42)).toEqual(run(42));
  });

  it('another seed gives another sequence', () => {
    expect(run(43)).not.toEqual(run(42));
  });

  it('provision-only faults never hit other operations', () => {
    const hits = run(5).filter((d) => d.operation !== 'provision');
    expect(hits.some((d) => d.fault === 'duplicate-resource' || d.fault === 'late-resource')).toBe(false);
    expect(hits.some((d) => d.fault === 'server-error')).toBe(true);
  });

  it('a script entry hits only the nth call of its operation, adding latency entries up', () => {
    const injector = new FaultInjector({
      script: [
        { operation: 'describe', call: 2, fault: 'server-error' },
        { operation: 'describe', fault: 'latency', ms: 7 },
        { operation: 'describe', call: 2, fault: 'latency', ms: 3 },
      ],
    });
    const decisions = [1, 2, 3].map(() => injector.next('describe'));
    expect(decisions.map((d) => d.fault)).toEqual([null, 'server-error', null]);
    expect(decisions.map((d) => d.latencyMs)).toEqual([7, 10, 7]);
    expect(injector.next('release')).toMatchObject({ call: 1, fault: null, latencyMs: 0 });
  });

  it('an injected one-shot fault takes precedence for exactly one call', () => {
    const injector = new FaultInjector({ script: [{ operation: 'provision', fault: 'server-error' }] });
    injector.inject('provision', 'late-resource', 50);
    expect(injector.next('provision')).toMatchObject({ fault: 'late-resource', lateMs: 50 });
    expect(injector.next('provision')).toMatchObject({ fault: 'server-error' });
  });
});
