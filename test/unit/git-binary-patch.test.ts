// The document's Git patch: Git's blob IDs and base85, a write → read round trip for contents of
// every line-length remainder, and the strict reader's refusals (test/integration/
// output-document-git.test.ts checks that Git itself applies what we write).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OutputDocumentError } from '../../formats/awscapt2/document-errors.ts';
import {
  gitBlobId,
  readBinaryPatch,
  writeBinaryPatch,
  type PatchChange,
} from '../../formats/awscapt2/git-binary-patch.ts';

const reason = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    if (error instanceof OutputDocumentError) return error.reason;
    throw error;
  }
  return 'accepted';
};

describe('git binary patch', () => {
  it("computes Git's blob IDs", () => {
    expect(gitBlobId(Buffer.alloc(0))).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
    expect(gitBlobId(Buffer.from('hello\n'))).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
  });

  it('writes an added file as Git does: header, full index line, one literal, an empty line', () => {
    const text = writeBinaryPatch([
      { path: 'e', mode: '100644', content: Buffer.alloc(0), before: null },
    ]).toString();
    expect(text.split('\n')).toEqual([
      'diff --git a/e b/e',
      'new file mode 100644',
      `index ${'0'.repeat(40)}..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391`,
      'GIT binary patch',
      'literal 0',
      // 8 bytes of zlib stream: length marker H, then two base85 groups.
      expect.stringMatching(/^H.{10}$/),
      '',
      '',
    ]);
  });

  it('reads back what it wrote, for every size up to a few lines', () => {
    const changes: PatchChange[] = [];
    for (let size = 0; size <= 300; size += 1) {
      changes.push({
        path: `f/${String(size).padStart(3, '0')}`,
        mode: size % 2 === 0 ? '100644' : '100755',
        content: randomBytes(size),
        before: size % 3 === 0 ? null : { mode: '100644', blobId: gitBlobId(Buffer.from(`old ${size}`)) },
      });
    }
    const read = readBinaryPatch(writeBinaryPatch(changes), 1024);
    expect(read.map((f) => [f.path, f.mode, Buffer.from(f.content).toString('hex'), f.before])).toEqual(
      changes.map((c) => [c.path, c.mode, Buffer.from(c.content).toString('hex'), c.before]),
    );
    expect(read.every((f, i) => f.blobId === gitBlobId(changes[i]!.content))).toBe(true);
  });

  it('quotes paths holding a quote or a backslash, and reads them back', () => {
    const path = 'we"ird\\name with spaces';
    const patch = writeBinaryPatch([{ path, mode: '100644', content: Buffer.from('x'), before: null }]);
    expect(patch.toString().split('\n')[0]).toBe(
      'diff --git "a/we\\"ird\\\\name with spaces" "b/we\\"ird\\\\name with spaces"',
    );
    expect(readBinaryPatch(patch, 10)[0]!.path).toBe(path);
  });

  const one = writeBinaryPatch([
    {
      path: 'a.bin',
      mode: '100644',
      content: Buffer.from('abcdef'),
      before: { mode: '100644', blobId: '1'.repeat(40) },
    },
  ]).toString();
  const lines = one.split('\n');
  const replaceLine = (i: number, line: string) => lines.map((l, j) => (j === i ? line : l)).join('\n');

  it.each([
    ['no final empty line', one.slice(0, -1)],
    ['a header naming two paths', replaceLine(0, 'diff --git a/a.bin b/b.bin')],
    ['an unquoted quote', replaceLine(0, 'diff --git a/a"b b/a"b')],
    ['a bad index line', replaceLine(1, 'index 123..456 100644')],
    ['a symlink mode', replaceLine(1, `index ${'1'.repeat(40)}..${gitBlobId(Buffer.from('abcdef'))} 120000`)],
    ['a literal larger than it inflates to', replaceLine(3, 'literal 7')],
    ['a literal smaller than it inflates to', replaceLine(3, 'literal 5')],
    ['a literal past the content limit', replaceLine(3, 'literal 99999')],
    ['a character outside base85', replaceLine(4, `${lines[4]!.slice(0, -1)}"`)],
    ['a line shorter than its length marker', replaceLine(4, lines[4]!.slice(0, -5))],
    ['a group that overflows 32 bits', replaceLine(4, `${lines[4]![0]!}~~~~~${lines[4]!.slice(6)}`)],
    [
      'a blob ID that is not the content',
      replaceLine(1, `index ${'1'.repeat(40)}..${'2'.repeat(40)} 100644`),
    ],
    ['not UTF-8', Buffer.from([0xff, 0x0a, 0x0a])],
  ])('refuses %s', (_name, patch) => {
    expect(reason(() => readBinaryPatch(typeof patch === 'string' ? Buffer.from(patch) : patch, 1000))).toBe(
      'malformed-patch',
    );
  });

  it('refuses a deflate bomb: inflation stops at the declared size', () => {
    const big = writeBinaryPatch([
      { path: 'z', mode: '100644', content: Buffer.alloc(1_000_000), before: null },
    ]);
    const bomb = big.toString().replace('literal 1000000', 'literal 6');
    expect(big.length).toBeLessThan(2_000);
    expect(reason(() => readBinaryPatch(Buffer.from(bomb), 1000))).toBe('malformed-patch');
    expect(readBinaryPatch(big, 1_000_000)[0]!.content.length).toBe(1_000_000);
  });
});
