import { describe, expect, it } from 'vitest';
import { attemptTable, environmentTable } from '../../cli/envs.ts';
import { table } from '../../cli/table.ts';

describe('CLI tables', () => {
  it('pads each column to its widest cell and leaves no trailing blanks', () => {
    expect(
      table(
        ['A', 'LONG'],
        [
          ['wide cell', 'x'],
          ['b', ''],
        ],
      ),
    ).toBe('A          LONG\nwide cell  x\nb');
  });

  it('prints only the header for no rows', () => {
    expect(table(['ONE', 'TWO'], [])).toBe('ONE  TWO');
  });

  it('marks a quarantined Environment and a missing sandbox state', () => {
    const text = environmentTable([
      {
        environmentId: 'env_a',
        projectId: 'p',
        runId: 'r',
        idempotencyKey: 'k',
        lifecycleGeneration: 1,
        state: 'Registered',
        sandboxState: null,
        leaseExpiresAt: null,
        unresolvedAttempts: 2,
        pendingCleanups: 0,
        quarantined: true,
        revision: 3,
        createdAt: '2026-12-01T00:00:00.000Z',
        updatedAt: '2026-12-01T00:00:01.000Z',
      },
    ]);
    expect(text.split('\n')[1]).toMatch(
      /^env_a\s+p\s+r\s+Registered \(quarantined\)\s+-\s+1\s+3\s+2\s+0\s+2026/,
    );
  });

  it("shows an attempt's error, else its resolution", () => {
    const base = {
      kind: 'provision',
      lifecycleGeneration: 1,
      resourceGeneration: 1,
      providerFence: 1,
      fencingGeneration: 1,
      requestFingerprint: 'f',
      createdAt: 't0',
      dispatchedAt: null,
      deadlineAt: null,
      dispatchCount: 0,
      lateResultAt: null,
    };
    const lines = attemptTable([
      {
        ...base,
        attemptId: 'a.1',
        state: 'Unknown',
        resolvedAt: null,
        resolution: null,
        error: { code: 'timeout', message: 'no answer' },
      },
      {
        ...base,
        attemptId: 'a.2',
        state: 'Superseded',
        resolvedAt: 't1',
        resolution: 'superseded before dispatch',
        error: null,
      },
    ]).split('\n');
    expect(lines[1]).toMatch(/Unknown .* -\s+timeout: no answer$/);
    expect(lines[2]).toMatch(/Superseded .* t1\s+superseded before dispatch$/);
  });
});
