// The AWSCAPT2 output document: round trips, and what parse and serialize refuse. Documents are
// built by constructDocument, then taken apart and reassembled with `frame` (no checks at all) or
// `reseal` (section digests updated), so each case breaks exactly one thing.
import { describe, expect, it } from 'vitest';
import { constructDocument } from '../../formats/awscapt2/construct-document.ts';
import { OutputDocumentError, type DocumentFailure } from '../../formats/awscapt2/document-errors.ts';
import {
  MAX_FILES,
  MAX_MANIFEST_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_PACKAGE_BYTES,
  MAX_PATCH_BYTES,
} from '../../formats/awscapt2/document-limits.ts';
import { encodeManifest, type Manifest } from '../../formats/awscapt2/document-manifest.ts';
import { encodePackage, sha256Of } from '../../formats/awscapt2/file-package.ts';
import {
  documentReference,
  parseDocument,
  serializeDocument,
} from '../../formats/awscapt2/output-document.ts';
import { file, frame, reseal, sampleInput } from '../support/build-test-documents.ts';

/** One package entry as bytes, whatever its path. */
function rawEntry(path: string | Buffer, content: string): Buffer {
  const pathBytes = typeof path === 'string' ? Buffer.from(path) : path;
  const header = Buffer.alloc(40);
  header.writeUInt16BE(pathBytes.length, 0);
  header.writeUInt16BE(0o100644, 2);
  header.writeUInt32BE(Buffer.byteLength(content), 4);
  Buffer.from(sha256Of(Buffer.from(content)), 'hex').copy(header, 8);
  return Buffer.concat([header, pathBytes, Buffer.from(content)]);
}

function failure(run: () => unknown): DocumentFailure {
  try {
    run();
  } catch (error) {
    if (error instanceof OutputDocumentError) return error.reason;
    throw error;
  }
  throw new Error('nothing was refused');
}

const built = constructDocument(sampleInput());
const parsed = parseDocument(built.bytes);
const { manifest } = parsed;
const manifestBytes = encodeManifest(manifest);

describe('output document round trip', () => {
  it('parses what construct serialized, and serializes it back to the same bytes', () => {
    expect(parsed.manifest).toEqual(built.manifest);
    const again = serializeDocument({
      manifest: parsed.manifest,
      patch: parsed.patch,
      package: parsed.package,
    });
    expect(again.equals(built.bytes)).toBe(true);
    const reparsed = parseDocument(again);
    expect(reparsed.manifest).toEqual(parsed.manifest);
    expect(Buffer.from(reparsed.patch).equals(Buffer.from(parsed.patch))).toBe(true);
    expect(Buffer.from(reparsed.package).equals(Buffer.from(parsed.package))).toBe(true);
  });

  it('lays the sections out behind a 24-byte header of their lengths', () => {
    const bytes = built.bytes;
    expect(bytes.subarray(0, 8).toString('latin1')).toBe('AWSCAPT2');
    const m = bytes.readUInt32BE(8);
    const p = bytes.readUInt32BE(12);
    const k = Number(bytes.readBigUInt64BE(16));
    expect(24 + m + p + k).toBe(bytes.length);
    expect(bytes.subarray(24, 24 + m).equals(manifestBytes)).toBe(true);
    expect(sha256Of(bytes.subarray(24 + m, 24 + m + p))).toBe(manifest.patch.sha256);
    expect(sha256Of(bytes.subarray(24 + m + p))).toBe(manifest.package.sha256);
  });

  it('refers to a document by the SHA-256 and length of its bytes', () => {
    expect(documentReference(built.bytes)).toEqual({
      sha256: sha256Of(built.bytes),
      length: built.bytes.length,
    });
    expect(built.reference).toEqual(documentReference(built.bytes));
  });

  it('checks each file digest: the parsed files are the package contents', () => {
    for (const [i, f] of parsed.files.entries()) {
      expect(f.sha256).toBe(sha256Of(f.content));
      expect(f.sha256).toBe(manifest.files[i]!.sha256);
    }
  });
});

describe('parseDocument refuses', () => {
  const { patch } = parsed;
  const pkg = parsed.package;
  const withHeader = (edit: (header: Buffer) => void) => {
    const copy = Buffer.from(built.bytes);
    edit(copy);
    return copy;
  };
  const flip = (bytes: Uint8Array, at: number) => {
    const copy = Buffer.from(bytes);
    copy[at] = copy[at]! ^ 0xff;
    return copy;
  };
  const alter = (change: (m: Manifest) => Manifest) => reseal(change(structuredClone(manifest)), patch, pkg);

  const cases: [string, () => Uint8Array, DocumentFailure][] = [
    ['a header cut short', () => built.bytes.subarray(0, 23), 'truncated'],
    ['another magic', () => withHeader((h) => h.write('AWSCAPT1', 0, 'latin1')), 'invalid-header'],
    ['an empty manifest', () => withHeader((h) => h.writeUInt32BE(0, 8)), 'invalid-length'],
    [
      'a manifest length past its limit',
      () => withHeader((h) => h.writeUInt32BE(MAX_MANIFEST_BYTES + 1, 8)),
      'invalid-length',
    ],
    [
      'a patch length past its limit',
      () => withHeader((h) => h.writeUInt32BE(MAX_PATCH_BYTES + 1, 12)),
      'invalid-length',
    ],
    [
      'a package length past its limit',
      () => withHeader((h) => h.writeBigUInt64BE(BigInt(MAX_PACKAGE_BYTES) + 1n, 16)),
      'invalid-length',
    ],
    [
      'a package length in the high 32 bits',
      () => withHeader((h) => h.writeBigUInt64BE(1n << 40n, 16)),
      'invalid-length',
    ],
    [
      'a package shorter than its file count',
      () => withHeader((h) => h.writeBigUInt64BE(3n, 16)),
      'invalid-length',
    ],
    ['one byte short', () => built.bytes.subarray(0, built.bytes.length - 1), 'truncated'],
    ['one extra byte', () => Buffer.concat([built.bytes, Buffer.from([0])]), 'trailing-bytes'],
    ['a manifest that is not JSON', () => frame(Buffer.from('{"format":'), patch, pkg), 'malformed-manifest'],
    [
      'a manifest that is not UTF-8',
      () => frame(Buffer.from([0xff, 0xfe]), patch, pkg),
      'malformed-manifest',
    ],
    [
      'a manifest that is JSON but not canonical',
      () => frame(Buffer.from(JSON.stringify(manifest, null, 1)), patch, pkg),
      'malformed-manifest',
    ],
    [
      'a manifest with an unknown field',
      () => alter((m) => ({ ...m, extra: 1 }) as Manifest),
      'malformed-manifest',
    ],
    ['a patch byte changed', () => frame(manifestBytes, flip(patch, 10), pkg), 'section-digest-mismatch'],
    [
      'a package byte changed',
      () => frame(manifestBytes, patch, flip(pkg, pkg.length - 1)),
      'section-digest-mismatch',
    ],
    [
      'a file whose content does not match its package digest',
      () => reseal(manifest, patch, flip(pkg, pkg.length - 1)),
      'file-digest-mismatch',
    ],
    [
      'a package whose file count runs past its entries',
      () => {
        const bad = Buffer.from(pkg);
        bad.writeUInt32BE(bad.readUInt32BE(0) + 1, 0);
        return reseal(manifest, patch, bad);
      },
      'malformed-package',
    ],
    [
      'a package with bytes after its last entry',
      () => reseal(manifest, patch, Buffer.concat([pkg, Buffer.from([1])])),
      'malformed-package',
    ],
    [
      'a package entry with a directory mode',
      () => {
        const bad = Buffer.from(pkg);
        bad.writeUInt16BE(0o040000, 4 + 2);
        return reseal(manifest, patch, bad);
      },
      'malformed-package',
    ],
    [
      'a package out of path order',
      () => {
        const files = parsed.files.map((f) => ({ path: f.path, mode: f.mode, content: f.content }));
        const swapped = Buffer.concat([
          Buffer.from([0, 0, 0, 2]),
          encodePackage([files[1]!]).subarray(4),
          encodePackage([files[0]!]).subarray(4),
        ]);
        return reseal(manifest, patch, swapped);
      },
      'malformed-package',
    ],
    [
      'a package entry whose path enters .git',
      () => reseal(manifest, patch, Buffer.concat([Buffer.from([0, 0, 0, 1]), rawEntry('.git/config', 'x')])),
      'malformed-package',
    ],
    [
      'a package entry whose path is not UTF-8',
      () =>
        reseal(
          manifest,
          patch,
          Buffer.concat([Buffer.from([0, 0, 0, 1]), rawEntry(Buffer.from([0xc3, 0x28]), 'x')]),
        ),
      'malformed-package',
    ],
    [
      'a package with a file the manifest does not list',
      () => {
        const files = [
          ...parsed.files.map((f) => ({ path: f.path, mode: f.mode, content: f.content })),
          file('zz', 'x'),
        ];
        return reseal(manifest, patch, encodePackage(files));
      },
      'package-manifest-mismatch',
    ],
    [
      'a manifest file with another size',
      () =>
        alter((m) => {
          m.files[0]!.size += 1;
          return m;
        }),
      'package-manifest-mismatch',
    ],
    [
      'a manifest file with a wrong blob ID',
      () =>
        alter((m) => {
          m.files[0]!.blobId = '1'.repeat(40);
          return m;
        }),
      'file-digest-mismatch',
    ],
    [
      'totals that do not add up',
      () => alter((m) => ({ ...m, totals: { ...m.totals, bytes: m.totals.bytes + 1 } })),
      'inconsistent-manifest',
    ],
    [
      "a baseline digest that is not the files' baseline",
      () => alter((m) => ({ ...m, baseline: { ...m.baseline, sha256: '0'.repeat(64) } })),
      'inconsistent-manifest',
    ],
    [
      'an undeclared file marked modified',
      () =>
        alter((m) => {
          const f = m.files.find((x) => x.change === 'modified')!;
          f.output = false;
          return m;
        }),
      'changed-undeclared-file',
    ],
    [
      'an undeclared file marked added',
      () =>
        alter((m) => {
          const f = m.files.find((x) => x.change === 'added')!;
          f.output = false;
          return m;
        }),
      'undeclared-additional-file',
    ],
    [
      'a modified file without its baseline',
      () =>
        alter((m) => {
          delete m.files.find((x) => x.change === 'modified')!.before;
          return m;
        }),
      'inconsistent-manifest',
    ],
    [
      `a package declaring ${MAX_FILES + 1} files`,
      () => {
        const count = Buffer.alloc(4);
        count.writeUInt32BE(MAX_FILES + 1);
        return reseal(manifest, patch, count);
      },
      'limit-exceeded',
    ],
    [
      `a manifest listing ${MAX_FILES + 1} files`,
      () => alter((m) => ({ ...m, files: Array.from({ length: MAX_FILES + 1 }, () => m.files[0]!) })),
      'malformed-manifest',
    ],
    [
      `a manifest recording more than ${MAX_OUTPUT_BYTES} bytes of outputs`,
      () => alter((m) => ({ ...m, totals: { ...m.totals, outputBytes: MAX_OUTPUT_BYTES + 1 } })),
      'malformed-manifest',
    ],
    ['an empty patch where outputs changed', () => reseal(manifest, Buffer.alloc(0), pkg), 'malformed-patch'],
    [
      'a patch that is not a Git binary patch',
      () => reseal(manifest, Buffer.from('diff --git a/x b/x\n\n'), pkg),
      'malformed-patch',
    ],
    [
      'a patch whose literal is not the package content',
      () => {
        const other = constructDocument({
          ...sampleInput(),
          collected: sampleInput().collected.map((f) =>
            f.path === 'dist/app.js' ? file('dist/app.js', 'other') : f,
          ),
          outputs: sampleInput().outputs.map((o) =>
            o.path === 'dist/app.js'
              ? { path: o.path, evidence: { size: 5, sha256: sha256Of(Buffer.from('other')) } }
              : o,
          ),
        });
        return reseal(manifest, parseDocument(other.bytes).patch, pkg);
      },
      'malformed-patch',
    ],
  ];

  it.each(cases)('%s', (_name, make, reason) => {
    expect(failure(() => parseDocument(make()))).toBe(reason);
  });
});

describe('serializeDocument refuses', () => {
  it('a manifest that does not record the patch it is given', () => {
    expect(
      failure(() => serializeDocument({ manifest, patch: Buffer.from('x'), package: parsed.package })),
    ).toBe('section-digest-mismatch');
  });

  it('a manifest that does not record the package it is given', () => {
    const other = encodePackage(
      parsed.files.slice(1).map((f) => ({ path: f.path, mode: f.mode, content: f.content })),
    );
    expect(failure(() => serializeDocument({ manifest, patch: parsed.patch, package: other }))).toBe(
      'section-digest-mismatch',
    );
  });

  it('a saved manifest that lists other files than the package holds', () => {
    const other = { ...manifest, files: manifest.files.slice(1) };
    expect(
      failure(() => serializeDocument({ manifest: other, patch: parsed.patch, package: parsed.package })),
    ).toBe('package-manifest-mismatch');
  });

  it('a manifest that breaks its schema', () => {
    const bad = { ...manifest, format: 'AWSCAPT1' } as unknown as Manifest;
    expect(
      failure(() => serializeDocument({ manifest: bad, patch: parsed.patch, package: parsed.package })),
    ).toBe('malformed-manifest');
  });
});
