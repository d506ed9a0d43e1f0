// Constructing a version 2 output document from the accepted seed's baseline inventory and the
// complete collected tree: what the package keeps, what is refused, and the complete-tree limits at
// exactly the admitted value and one file or byte past it.
import { describe, expect, it } from 'vitest';
import { constructDocument, type ConstructInput } from '../../formats/awscapt2/construct-document.ts';
import { OutputDocumentError, type DocumentFailure } from '../../formats/awscapt2/document-errors.ts';
import {
  MAX_FILES,
  MAX_OUTPUT_BYTES,
  MAX_PATH_BYTES,
  MAX_TOTAL_FILE_BYTES,
} from '../../formats/awscapt2/document-limits.ts';
import { baselineDigest } from '../../formats/awscapt2/document-manifest.ts';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import {
  BASE_FILES,
  baselineOf,
  binding,
  file,
  outputsOf,
  sampleInput,
  source,
} from '../support/build-test-documents.ts';

function refusal(input: ConstructInput): { reason: DocumentFailure; path: string | undefined } {
  try {
    constructDocument(input);
  } catch (error) {
    if (error instanceof OutputDocumentError) return { reason: error.reason, path: error.path };
    throw error;
  }
  throw new Error('the document was constructed');
}

describe('constructDocument', () => {
  it('keeps every baseline file and each declared output, and records what changed', () => {
    const input = sampleInput();
    const { bytes, manifest, reference } = constructDocument(input);
    expect(manifest.files.map((f) => [f.path, f.change, f.output])).toEqual([
      ['README.md', 'unchanged', false],
      ['dist/app.js', 'added', true],
      ['scripts/build.sh', 'unchanged', false],
      ['src/index.js', 'modified', true],
    ]);
    expect(manifest.baseline).toEqual({
      files: 3,
      bytes: BASE_FILES.reduce((n, f) => n + f.content.length, 0),
      sha256: baselineDigest(input.baseline),
    });
    expect(manifest.totals).toEqual({ files: 4, bytes: manifest.totals.bytes, outputBytes: 5 + 16 });
    expect(manifest.binding).toEqual(binding);
    expect(manifest.source).toEqual(source);
    expect(reference.length).toBe(bytes.length);
    const parsed = parseDocument(bytes);
    expect(parsed.files.map((f) => Buffer.from(f.content).toString('latin1'))).toEqual(
      [input.collected[0], input.collected[3], input.collected[2], input.collected[1]].map((f) =>
        Buffer.from(f!.content).toString('latin1'),
      ),
    );
  });

  it('is deterministic: the same inventories in another order give the same bytes', () => {
    const input = sampleInput();
    const shuffled = {
      ...input,
      baseline: [...input.baseline].reverse(),
      collected: [...input.collected].reverse(),
      outputs: [...input.outputs].reverse(),
    };
    expect(constructDocument(shuffled).bytes.equals(constructDocument(input).bytes)).toBe(true);
  });

  it('accepts version 2 with no declared output: an empty patch, the whole baseline packaged', () => {
    const { bytes, manifest } = constructDocument({
      binding,
      source,
      baseline: baselineOf(BASE_FILES),
      collected: BASE_FILES,
      outputs: [],
    });
    expect(manifest.patch.length).toBe(0);
    expect(bytes.readUInt32BE(12)).toBe(0);
    expect(parseDocument(bytes).files.map((f) => f.path)).toEqual([
      'README.md',
      'scripts/build.sh',
      'src/index.js',
    ]);
  });

  it('accepts an unchanged declared output (it is kept, not patched)', () => {
    const { manifest } = constructDocument({
      binding,
      source,
      baseline: baselineOf(BASE_FILES),
      collected: BASE_FILES,
      outputs: outputsOf(BASE_FILES, ['README.md']),
    });
    expect(manifest.files[0]).toMatchObject({ path: 'README.md', output: true, change: 'unchanged' });
    expect(manifest.patch.length).toBe(0);
  });

  const base = sampleInput();
  const cases: [string, ConstructInput, DocumentFailure, string | undefined][] = [
    [
      'a baseline file missing from the tree',
      { ...base, collected: base.collected.filter((f) => f.path !== 'README.md') },
      'missing-baseline-file',
      'README.md',
    ],
    [
      'a declared output deleted from the baseline',
      {
        ...base,
        collected: base.collected.filter((f) => f.path !== 'src/index.js'),
        outputs: base.outputs.filter((o) => o.path !== 'src/index.js'),
      },
      'missing-baseline-file',
      'src/index.js',
    ],
    [
      'a changed undeclared file (content)',
      { ...base, collected: [...base.collected.slice(1), file('README.md', '# changed\n')] },
      'changed-undeclared-file',
      'README.md',
    ],
    [
      'a changed undeclared file (mode only)',
      { ...base, collected: [...base.collected.slice(1), file('README.md', '# demo\n', '100755')] },
      'changed-undeclared-file',
      'README.md',
    ],
    [
      'an undeclared additional file',
      { ...base, collected: [...base.collected, file('tmp/cache', 'x')] },
      'undeclared-additional-file',
      'tmp/cache',
    ],
    [
      'a declared output missing from the tree',
      {
        ...base,
        outputs: [
          ...base.outputs,
          { path: 'dist/missing.js', evidence: { size: 0, sha256: '0'.repeat(64) } },
        ],
      },
      'missing-output',
      'dist/missing.js',
    ],
    [
      'an output whose size differs from its evidence',
      {
        ...base,
        outputs: base.outputs.map((o) =>
          o.path === 'dist/app.js' ? { ...o, evidence: { ...o.evidence, size: 6 } } : o,
        ),
      },
      'output-evidence-mismatch',
      'dist/app.js',
    ],
    [
      'an output whose digest differs from its evidence',
      {
        ...base,
        outputs: base.outputs.map((o) =>
          o.path === 'dist/app.js' ? { ...o, evidence: { ...o.evidence, sha256: '1'.repeat(64) } } : o,
        ),
      },
      'output-evidence-mismatch',
      'dist/app.js',
    ],
    [
      'a path collected twice',
      { ...base, collected: [...base.collected, file('README.md', '# demo\n')] },
      'duplicate-path',
      'README.md',
    ],
    [
      'a path in the root .git directory',
      { ...base, collected: [...base.collected, file('.git/HEAD', 'x')] },
      'invalid-path',
      '.git/HEAD',
    ],
    [
      'a path with a ".." segment',
      { ...base, collected: [...base.collected, file('a/../b', 'x')] },
      'invalid-path',
      'a/../b',
    ],
    [
      'an absolute path',
      { ...base, collected: [...base.collected, file('/etc/passwd', 'x')] },
      'invalid-path',
      '/etc/passwd',
    ],
    [
      'an empty segment',
      { ...base, collected: [...base.collected, file('a//b', 'x')] },
      'invalid-path',
      'a//b',
    ],
    [
      'a control character',
      { ...base, collected: [...base.collected, file('a\nb', 'x')] },
      'invalid-path',
      'a\nb',
    ],
    [
      'a lone surrogate',
      { ...base, collected: [...base.collected, file('a\ud800', 'x')] },
      'invalid-path',
      'a\ud800',
    ],
    [
      'a symlink-like mode',
      {
        ...base,
        collected: [
          ...base.collected.slice(1),
          { ...file('README.md', '# demo\n'), mode: '120000' as never },
        ],
      },
      'invalid-inventory',
      'README.md',
    ],
    [
      'a malformed baseline entry',
      { ...base, baseline: base.baseline.map((b, i) => (i === 0 ? { ...b, blobId: 'nope' } : b)) },
      'invalid-inventory',
      'README.md',
    ],
    [
      'a baseline entry whose blob ID contradicts its SHA-256',
      { ...base, baseline: base.baseline.map((b, i) => (i === 0 ? { ...b, blobId: '0'.repeat(40) } : b)) },
      'invalid-inventory',
      'README.md',
    ],
  ];
  it.each(cases)('refuses %s', (_name, input, reason, path) => {
    expect(refusal(input)).toEqual({ reason, path });
  });
});

describe('constructDocument limits', () => {
  /** `count` empty files at the root, all baseline, none changed. */
  const manyFiles = (count: number) =>
    Array.from({ length: count }, (_, i) => file(`f/${String(i).padStart(5, '0')}`, ''));

  it(`admits exactly ${MAX_FILES} files and refuses one more`, () => {
    const files = manyFiles(MAX_FILES);
    const { manifest } = constructDocument({
      binding,
      source,
      baseline: baselineOf(files),
      collected: files,
      outputs: [],
    });
    expect(manifest.totals.files).toBe(MAX_FILES);

    const more = manyFiles(MAX_FILES + 1);
    const added = more.at(-1)!;
    expect(
      refusal({
        binding,
        source,
        baseline: baselineOf(files),
        collected: more,
        outputs: outputsOf(more, [added.path]),
      }).reason,
    ).toBe('limit-exceeded');
  });

  it(`admits exactly ${MAX_TOTAL_FILE_BYTES} bytes of content and refuses one byte more`, () => {
    const half = MAX_TOTAL_FILE_BYTES / 2;
    const files = [file('a.bin', Buffer.alloc(half, 1)), file('b.bin', Buffer.alloc(half, 2))];
    const { bytes, manifest } = constructDocument({
      binding,
      source,
      baseline: baselineOf(files),
      collected: files,
      outputs: [],
    });
    expect(manifest.totals.bytes).toBe(MAX_TOTAL_FILE_BYTES);
    expect(parseDocument(bytes).files).toHaveLength(2);

    const over = [...files, file('c.bin', 'x')];
    expect(
      refusal({
        binding,
        source,
        baseline: baselineOf(files),
        collected: over,
        outputs: outputsOf(over, ['c.bin']),
      }).reason,
    ).toBe('limit-exceeded');
  });

  it(`admits exactly ${MAX_OUTPUT_BYTES} bytes of declared outputs and refuses one byte more`, () => {
    const atLimit = [file('out/a.bin', Buffer.alloc(MAX_OUTPUT_BYTES - 3, 7)), file('out/b.bin', 'xyz')];
    const { bytes, manifest } = constructDocument({
      binding,
      source,
      baseline: [],
      collected: atLimit,
      outputs: outputsOf(atLimit, ['out/a.bin', 'out/b.bin']),
    });
    expect(manifest.totals.outputBytes).toBe(MAX_OUTPUT_BYTES);
    expect(parseDocument(bytes).files).toHaveLength(2);

    const over = [file('out/a.bin', Buffer.alloc(MAX_OUTPUT_BYTES - 3, 7)), file('out/b.bin', 'xyzw')];
    expect(
      refusal({
        binding,
        source,
        baseline: [],
        collected: over,
        outputs: outputsOf(over, ['out/a.bin', 'out/b.bin']),
      }).reason,
    ).toBe('limit-exceeded');
  });

  it('counts only declared outputs against the output limit: baseline files may be larger', () => {
    const big = [file('vendor/blob.bin', Buffer.alloc(MAX_OUTPUT_BYTES + 1, 3)), file('out.txt', 'ok')];
    const { manifest } = constructDocument({
      binding,
      source,
      baseline: baselineOf(big.slice(0, 1)),
      collected: big,
      outputs: outputsOf(big, ['out.txt']),
    });
    expect(manifest.totals.outputBytes).toBe(2);
  });

  it(`admits a ${MAX_PATH_BYTES}-byte path and refuses one byte more`, () => {
    const longest = `${'d/'.repeat(100)}${'é'.repeat((MAX_PATH_BYTES - 200) / 2)}`;
    expect(Buffer.byteLength(longest)).toBe(MAX_PATH_BYTES);
    const files = [file(longest, 'x')];
    expect(
      constructDocument({
        binding,
        source,
        baseline: [],
        collected: files,
        outputs: outputsOf(files, [longest]),
      }).manifest.files[0]!.path,
    ).toBe(longest);
    const over = [file(`${longest}x`, 'x')];
    expect(
      refusal({ binding, source, baseline: [], collected: over, outputs: outputsOf(over, [`${longest}x`]) })
        .reason,
    ).toBe('invalid-path');
  });

  it('fits the worst case in its sections: 10,000 declared outputs with 1,024-byte quoted paths', () => {
    const name = (i: number) => `${String(i).padStart(5, '0')}/${'"'.repeat(MAX_PATH_BYTES - 6)}`;
    const files = Array.from({ length: MAX_FILES }, (_, i) => file(name(i), 'x'));
    const { bytes, manifest } = constructDocument({
      binding,
      source,
      baseline: [],
      collected: files,
      outputs: outputsOf(
        files,
        files.map((f) => f.path),
      ),
    });
    expect(manifest.files).toHaveLength(MAX_FILES);
    expect(parseDocument(bytes).files).toHaveLength(MAX_FILES);
  });
});
