// The retirement judge (actors/workspace/retirement.ts): a retiring lease's volume counters are
// accepted only as the lease attached them, or as exactly its own verified flushes moved them.
import { describe, expect, it } from 'vitest';
import { retirementProblem } from '../../actors/workspace/retirement.ts';

const volumeAt = (dataGeneration: number) => ({ dataGeneration });
const flushesFrom = (...generations: number[]) => generations.map((dataGeneration) => ({ dataGeneration }));

describe('retirementProblem', () => {
  it('accepts a volume where the lease attached it, flushed or not', () => {
    expect(retirementProblem(3, volumeAt(3), [])).toEqual({ problem: null, flushed: false });
  });

  it("accepts counters moved one by one by the lease's own flushes", () => {
    expect(retirementProblem(3, volumeAt(4), flushesFrom(3))).toEqual({ problem: null, flushed: true });
    expect(retirementProblem(3, volumeAt(5), flushesFrom(3, 4))).toEqual({ problem: null, flushed: true });
  });

  it('refuses counters no flush of the lease explains', () => {
    expect(retirementProblem(3, volumeAt(4), []).problem).toContain('data generation 4');
    expect(retirementProblem(3, volumeAt(5), flushesFrom(3)).problem).not.toBeNull();
    // A flush that starts elsewhere (another attachment's) is not this lease's chain.
    expect(retirementProblem(3, volumeAt(5), flushesFrom(4)).problem).not.toBeNull();
    expect(retirementProblem(3, volumeAt(2), flushesFrom(3)).problem).not.toBeNull();
  });
});
