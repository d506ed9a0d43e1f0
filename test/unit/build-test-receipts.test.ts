// The Kubernetes collector's answer, checked before the runner believes it: a sealed receipt is
// accepted only when it is bound to this collector and its capture could be a document of ours.
import { describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_BYTES } from '../../formats/awscapt2/document-limits.ts';
import { checkCollectorAnswer } from '../../providers/agent-sandbox/build-test-receipts.ts';
import type { HelperRequest } from '../../providers/agent-sandbox/build-test-pods.ts';
import { COLLECTOR_CONTAINER } from '../../providers/agent-sandbox/build-test-names.ts';

const hex = (c: string) => c.repeat(64);
const request: HelperRequest = {
  operationId: 'bt_1',
  checkpointId: 'cp_1',
  requestFingerprint: hex('a'),
  version: 2,
  repositoryPath: '/workspace/.sandlot/bt_1/repo',
  workingDirectory: '.',
  timeoutSeconds: 60,
  outputs: ['out.txt'],
  source: { seedSha256: hex('b'), seedLength: 10, baseSha: 'c'.repeat(40) },
};

const sealed = (length: number) =>
  Buffer.from(
    JSON.stringify({
      state: 'sealed',
      receipt: {
        podUid: 'pod-uid-1',
        container: COLLECTOR_CONTAINER,
        operationId: 'bt_1',
        checkpointId: 'cp_1',
        requestFingerprint: hex('a'),
        version: 2,
        outputs: [{ path: 'out.txt', size: 1, sha256: hex('d') }],
        capture: { sha256: hex('e'), length },
      },
    }),
  );

describe('the collector answer', () => {
  it('accepts a capture up to the document limit', () => {
    expect(checkCollectorAnswer(sealed(MAX_DOCUMENT_BYTES), request, 'pod-uid-1')).toMatchObject({
      state: 'sealed',
      receipt: { capture: { length: MAX_DOCUMENT_BYTES } },
    });
  });

  it('refuses a capture longer than any document, or empty', () => {
    for (const length of [MAX_DOCUMENT_BYTES + 1, 0]) {
      expect(checkCollectorAnswer(sealed(length), request, 'pod-uid-1')).toEqual({
        state: 'failed',
        reason: 'invalid-receipt',
        message: 'the collector receipt is malformed',
      });
    }
  });

  it('refuses a receipt of another Pod', () => {
    expect(checkCollectorAnswer(sealed(100), request, 'pod-uid-2')).toMatchObject({
      state: 'failed',
      reason: 'invalid-receipt',
    });
  });
});
