// What a BuildTest command Pod's status says, without a cluster: the kubelet's evictions (an
// output-limit one above all) are interruptions and never the killed container's exit code, and the
// bounded log read keeps exactly the end of the log within maxLogBytes.
import { describe, expect, it } from 'vitest';
import type { V1Pod } from './client-node.ts';
import { evictionOf } from './build-test-evictions.ts';
import { lastLineOf, tailOf } from './build-test-log.ts';
import { BUILD_TEST_ANNOTATIONS as A } from './build-test-names.ts';
import { commandObservationOf, maxLogBytesOf } from './build-test-observe.ts';

type Status = NonNullable<V1Pod['status']>;
type State = NonNullable<NonNullable<Status['containerStatuses']>[number]['state']>;

const at = new Date('2026-12-01T10:00:00Z');
const killed: State = { terminated: { exitCode: 137, reason: 'Error', startedAt: at, finishedAt: at } };
const exited = (exitCode: number): State => ({
  terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: at, finishedAt: at },
});
const waiting: State = { waiting: { reason: 'PodInitializing' } };

function commandPod(status: Partial<Status>, state: State, container = 'command'): V1Pod {
  return {
    metadata: { name: 'bt-x-cmd', uid: 'uid-1', annotations: { [A.maxLogBytes]: '4096' } },
    status: {
      ...status,
      containerStatuses: [{ name: container, image: 'i', imageID: '', ready: false, restartCount: 0, state }],
    },
  };
}

const CONTAINER_LIMIT = 'Container command exceeded its local ephemeral storage limit "8Gi". ';
const POD_TOTAL = 'Pod ephemeral local storage usage exceeds the total limit of containers 9Gi. ';

describe('commandObservationOf: how a command Pod ended', () => {
  const cases: { name: string; pod: V1Pod; expected: Record<string, unknown> }[] = [
    {
      name: '1. evicted for the command container’s ephemeral-storage limit (its output): output-limit, not exit 137',
      pod: commandPod({ phase: 'Failed', reason: 'Evicted', message: CONTAINER_LIMIT }, killed),
      expected: { state: 'interrupted', reason: 'output-limit' },
    },
    {
      name: '2. evicted for the Pod’s total once the command started: output-limit',
      pod: commandPod({ phase: 'Failed', reason: 'Evicted', message: POD_TOTAL }, killed),
      expected: { state: 'interrupted', reason: 'output-limit' },
    },
    {
      name: '3. evicted for the Pod’s total before the command started (the helper’s state): cancelled',
      pod: commandPod({ phase: 'Failed', reason: 'Evicted', message: POD_TOTAL }, waiting),
      expected: { state: 'interrupted', reason: 'cancelled' },
    },
    {
      name: '4. evicted for node pressure: cancelled, not exit 137',
      pod: commandPod(
        { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory. ' },
        killed,
      ),
      expected: { state: 'interrupted', reason: 'cancelled' },
    },
    {
      name: '5. another container’s limit is not the command’s output: cancelled',
      pod: commandPod(
        {
          phase: 'Failed',
          reason: 'Evicted',
          message: 'Container preparation exceeded its local ephemeral storage limit "1Gi". ',
        },
        killed,
      ),
      expected: { state: 'interrupted', reason: 'cancelled' },
    },
    {
      name: '6. the active deadline: timeout',
      pod: commandPod({ phase: 'Failed', reason: 'DeadlineExceeded' }, killed),
      expected: { state: 'interrupted', reason: 'timeout' },
    },
    {
      name: '7. a command that exited 2 by itself: its exit code, the log not yet read',
      pod: commandPod({ phase: 'Failed' }, exited(2)),
      expected: { state: 'exited', exitCode: 2, log: { bytes: 0, tail: '', unavailable: 'not-read' } },
    },
    {
      name: '8. still running: running',
      pod: commandPod({ phase: 'Running' }, { running: { startedAt: at } }),
      expected: { state: 'running' },
    },
  ];
  it.each(cases)('$name', ({ pod, expected }) => {
    expect(commandObservationOf(pod)).toMatchObject(expected);
  });

  it('names the kubelet’s message in an output-limit interruption', () => {
    const pod = commandPod({ phase: 'Failed', reason: 'Evicted', message: CONTAINER_LIMIT }, killed);
    const observed = commandObservationOf(pod);
    expect(observed.state === 'interrupted' && observed.message).toContain('exceeded its local ephemeral');
  });

  it('maps the collector’s own eviction the same way', () => {
    const pod = commandPod(
      {
        phase: 'Failed',
        reason: 'Evicted',
        message: 'Container collector exceeded its local ephemeral storage limit "1Gi". ',
      },
      killed,
      'collector',
    );
    expect(evictionOf(pod, 'collector')).toMatchObject({ reason: 'output-limit' });
    expect(evictionOf(commandPod({ phase: 'Failed' }, killed), 'collector')).toBeNull();
  });
});

describe('maxLogBytesOf: the limit the runner stamped on the Pod', () => {
  it.each([
    ['4096', 4096],
    ['16777216', 16 * 1024 * 1024],
    ['16777217', null],
    ['0', null],
    ['-1', null],
    ['1e3', null],
    [undefined, null],
  ])('%s → %s', (value, expected) => {
    const annotations = value === undefined ? {} : { [A.maxLogBytes]: value };
    expect(maxLogBytesOf({ metadata: { annotations } })).toBe(expected);
  });
});

describe('tailOf and lastLineOf: the end of the log within maxLogBytes', () => {
  const b = (text: string) => Buffer.from(text, 'utf8');

  it('keeps a whole log that fits and had no earlier line', () => {
    expect(tailOf(b('one\ntwo\n'), 4, 16)).toEqual({ bytes: 8, truncated: false, tail: 'one\ntwo\n' });
  });

  it('drops the extra line asked for, which only says earlier output exists', () => {
    // Asked for 2 + 1 lines, 3 came: the first is dropped and the log is truncated.
    expect(tailOf(b('a\nb\nc\n'), 2, 16)).toEqual({ bytes: 4, truncated: true, tail: 'b\nc\n' });
    expect(tailOf(b('a\nb\nc'), 2, 16)).toEqual({ bytes: 3, truncated: true, tail: 'b\nc' });
  });

  it('refuses an answer past the limit (the server cut it): fewer lines are asked for next', () => {
    expect(tailOf(b('x'.repeat(17)), 4, 16)).toBeNull();
    expect(tailOf(b('x'.repeat(16)), 4, 16)).toEqual({ bytes: 16, truncated: false, tail: 'x'.repeat(16) });
  });

  it('keeps the first maxLogBytes bytes of a last line that is longer, at a character boundary', () => {
    expect(lastLineOf(b('ab'), 16)).toEqual({ bytes: 2, truncated: true, tail: 'ab' });
    expect(lastLineOf(b('abcdé'), 5)).toEqual({ bytes: 4, truncated: true, tail: 'abcd' });
    expect(lastLineOf(b('abcdéf'), 6)).toEqual({ bytes: 6, truncated: true, tail: 'abcdé' });
  });
});
